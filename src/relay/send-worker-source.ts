/**
 * The relay send worker's code (src/relay/send-worker.ts), plain JavaScript run with `eval`: the
 * same under tsx, vitest and the built dist, with no loader of TypeScript in the worker. It makes
 * the producer as src/kafka/shared-producer.ts and src/kafka/kafka.ts do (idempotent, one request
 * in flight, no topic auto-creation, kafkajs's default murmur2 partitioner, retries 8 from 300 ms),
 * and checks each answer whole as src/kafka/message-positions.ts `sendWhole` does (kafkajs #1303):
 * a partition some message went to and the answer does not acknowledge fails the send.
 *
 * Messages in:  { type: 'send', id, topic, count, buf } (buf: src/relay/message-pack.ts),
 *               { type: 'reset', id } (replace the producer the send `id` used, if still current),
 *               { type: 'close', id }.
 * Messages out: { type: 'sent', id, partitions, offsets }, { type: 'failed', id, error },
 *               { type: 'log', level, message, fields }, { type: 'closed', id }.
 */
export const SEND_WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const { Kafka, Partitioners, logLevel } = require(workerData.kafkajs);

const partitionOf = new WeakMap();
const createPartitioner = () => {
  const pick = Partitioners.DefaultPartitioner();
  return (args) => {
    const partition = pick(args);
    partitionOf.set(args.message, partition);
    return partition;
  };
};

function plain(fields) {
  try {
    return JSON.parse(JSON.stringify(fields));
  } catch {
    return {};
  }
}

const kafka = new Kafka({
  clientId: workerData.clientId,
  brokers: workerData.brokers,
  logLevel: logLevel.WARN,
  retry: { initialRetryTime: 300, retries: 8 },
  logCreator: () => ({ level, log }) => {
    const { message, ...fields } = log;
    parentPort.postMessage({ type: 'log', level, message, fields: plain(fields) });
  },
});

let current = null;
let generation = 0;
/** The producer generation each send under way uses, by request id. */
const used = new Map();

function producer() {
  if (!current) {
    generation++;
    const p = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner,
    });
    current = p.connect().then(
      () => p,
      async (error) => {
        current = null;
        await p.disconnect().catch(() => undefined);
        throw error;
      },
    );
  }
  return current;
}

async function reset(gen) {
  if (gen !== generation || !current) return;
  const c = current;
  current = null;
  try {
    await (await c).disconnect();
  } catch {
    // already broken
  }
}

function tooLarge(error) {
  const seen = new Set();
  const stack = [error];
  while (stack.length > 0) {
    const e = stack.pop();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (e.type === 'MESSAGE_TOO_LARGE' || e.type === 'RECORD_LIST_TOO_LARGE') return true;
    if (typeof e.message === 'string' && /larger than the max message size/i.test(e.message)) return true;
    stack.push(e.cause, e.originalError, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return false;
}

const NULL = 0xffffffff;
function unpack(arrayBuffer, count) {
  const buf = Buffer.from(arrayBuffer);
  let at = 0;
  const bytes = (wide) => {
    const n = wide ? buf.readUInt32BE(at) : buf.readUInt16BE(at);
    at += wide ? 4 : 2;
    if (wide && n === NULL) return null;
    const b = buf.subarray(at, at + n);
    at += n;
    return b;
  };
  const messages = new Array(count);
  for (let i = 0; i < count; i++) {
    const key = bytes(true);
    const value = bytes(true);
    const n = buf.readUInt16BE(at);
    at += 2;
    const headers = {};
    for (let h = 0; h < n; h++) {
      const name = bytes(false).toString('utf8');
      headers[name] = bytes(true).toString('utf8');
    }
    messages[i] = { key: key === null ? null : key.toString('utf8'), value, headers };
  }
  return messages;
}

async function send({ id, topic, count, buf }) {
  const messages = unpack(buf, count);
  try {
    const p = producer();
    used.set(id, generation);
    const answer = await (await p).sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
    const base = new Map();
    for (const r of answer) if (r.topicName === topic && r.errorCode === 0) base.set(r.partition, r.baseOffset);
    const partitions = new Int32Array(count);
    const offsets = new Array(count).fill(null);
    const seen = new Map();
    const missing = new Set();
    for (let i = 0; i < count; i++) {
      const partition = partitionOf.get(messages[i]);
      partitions[i] = partition === undefined ? -1 : partition;
      const first = partition === undefined ? undefined : base.get(partition);
      if (first === undefined) {
        missing.add(partitions[i]);
        continue;
      }
      const index = seen.get(partition) || 0;
      seen.set(partition, index + 1);
      offsets[i] = (BigInt(first) + BigInt(index)).toString();
    }
    if (missing.size > 0) {
      const list = [...missing].sort((a, b) => a - b).join(', ');
      const error = new Error('Kafka acknowledged the batch for ' + topic + ' without partition(s) ' + list + ': it is sent again');
      error.name = 'IncompleteSendError';
      error.retriable = true;
      throw error;
    }
    used.delete(id);
    parentPort.postMessage({ type: 'sent', id, partitions, offsets });
  } catch (error) {
    const large = tooLarge(error);
    const gen = used.get(id);
    used.delete(id);
    if (!large && gen !== undefined) await reset(gen);
    parentPort.postMessage({
      type: 'failed',
      id,
      error: {
        name: String((error && error.name) || 'Error'),
        message: String((error && error.message) || error),
        type: large ? 'MESSAGE_TOO_LARGE' : error && typeof error.type === 'string' ? error.type : undefined,
        retriable: Boolean(error && error.retriable),
      },
    });
  }
}

parentPort.on('message', (m) => {
  if (m.type === 'send') void send(m);
  else if (m.type === 'reset') {
    const gen = used.get(m.id);
    used.delete(m.id);
    if (gen !== undefined) void reset(gen);
  } else if (m.type === 'close') {
    const c = current;
    current = null;
    Promise.resolve(c)
      .then((p) => p && p.disconnect())
      .catch(() => undefined)
      .then(() => parentPort.postMessage({ type: 'closed', id: m.id }));
  }
});
`;
