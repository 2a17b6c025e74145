import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import { kafkaLogMethod } from '../kafka/kafka-log-level.js';
import { within, type Position, type RelayPublisher } from './relay-publisher.js';
import { SEND_WORKER_SOURCE } from './send-worker-source.js';
import { packMessages } from './message-pack.js';

/**
 * The relay's producer in a worker thread of its own: kafkajs's encoding of each request (about
 * 60 % of a drain's CPU, profiled) runs beside the main thread's reading of the outbox instead of
 * taking turns with it, and the process's other work (the receiver's acknowledgements, consumers)
 * no longer waits behind it. The same producer as the shared one (idempotent, one request in flight
 * per broker, acks=all, the murmur2 partitioner, KAFKA retries), made from the same settings; each
 * request's messages cross as one transferred buffer (src/relay/message-pack.ts). A failed send
 * replaces the worker's producer, as the shared producer's users do; a worker that dies fails the
 * sends under way and a new one starts at the next send.
 */
export interface SendWorkerOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
}

interface Reply {
  type: 'sent' | 'failed' | 'log' | 'closed';
  id?: number;
  partitions?: Int32Array;
  offsets?: Array<string | null>;
  error?: { name: string; message: string; type?: string; retriable?: boolean };
  level?: number;
  message?: string;
  fields?: Record<string, unknown>;
}

interface Pending {
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
}

export function createSendWorkerPublisher(options: SendWorkerOptions): RelayPublisher {
  const log = options.logger.child({ component: 'kafkajs', thread: 'relay-send-worker' });
  const kafkajs = createRequire(import.meta.url).resolve('kafkajs');
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  function failAll(error: Error): void {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  }

  function start(): Worker {
    if (worker) return worker;
    const w = new Worker(SEND_WORKER_SOURCE, {
      eval: true,
      workerData: { kafkajs, brokers: options.brokers, clientId: options.clientId },
    });
    w.on('message', (reply: Reply) => {
      if (reply.type === 'log') {
        const method = kafkaLogMethod(reply.level!, reply.message!, reply.fields ?? {});
        log[method](reply.fields ?? {}, reply.message!);
        return;
      }
      const p = reply.id === undefined ? undefined : pending.get(reply.id);
      if (!p) return; // a send already given up (timed out)
      pending.delete(reply.id!);
      p.resolve(reply);
    });
    w.on('error', (error) => {
      options.logger.error({ err: error }, 'relay send worker failed: a new one starts at the next send');
    });
    w.on('exit', () => {
      if (worker === w) worker = null;
      failAll(new Error('the relay send worker exited'));
    });
    worker = w;
    return w;
  }

  function ask(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
    const id = nextId++;
    return new Promise<Reply>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      start().postMessage({ ...message, id }, transfer);
    });
  }

  return {
    async send(topic, messages, timeoutMs) {
      const packed = packMessages(messages);
      const id = nextId;
      let reply: Reply;
      try {
        reply = await within(
          timeoutMs,
          ask({ type: 'send', topic, count: messages.length, buf: packed }, [packed]),
        );
      } catch (error) {
        pending.delete(id);
        // Timed out (or the worker died): a fresh producer for the next send.
        worker?.postMessage({ type: 'reset', id });
        throw error;
      }
      if (reply.type === 'failed') {
        const e = reply.error!;
        throw Object.assign(new Error(e.message), { name: e.name, type: e.type, retriable: e.retriable });
      }
      const positions: Array<Position | undefined> = [];
      for (let i = 0; i < messages.length; i++) {
        const offset = reply.offsets![i];
        positions.push(offset == null ? undefined : { partition: reply.partitions![i]!, offset });
      }
      return positions;
    },
    async close() {
      const w = worker;
      if (!w) return;
      await within(5000, ask({ type: 'close' })).catch(() => undefined);
      worker = null;
      await w.terminate();
    },
  };
}
