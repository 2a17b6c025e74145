import { createHmac, randomUUID } from 'node:crypto';
import { request } from 'node:http';

/**
 * The chaos run's hostile phase (issue 14), once faults are over: the 20 × 250 KB burst with a
 * small command behind it, near-limit bodies, odd paths and encodings, long and dot ids, bodies
 * that are not UTF-8, and non-JSON bodies on the ops API. Counts requests and 5xx, times the
 * pipeline's drain after the burst, and reads the receiver's memory before and after.
 */
export interface HostileFigures {
  requests: number;
  fiveXx: number;
  /** From the last 202 of the burst to an empty outbox. */
  burstDrainMs: number | null;
  rssBeforeMb: number | null;
  rssAfterMb: number | null;
  /** Status → count, for the log. */
  statuses: Record<string, number>;
}

export async function runHostilePhase(options: {
  receiverUrl: string;
  pmsSecret: string;
  opsToken: string;
  /** Unpublished outbox rows (parked apart). */
  unpublished: () => Promise<number>;
  log: (message: string) => void;
}): Promise<HostileFigures> {
  const { receiverUrl, pmsSecret, opsToken } = options;
  const statuses: Record<string, number> = {};
  let requests = 0;
  let fiveXx = 0;
  const url = new URL(receiverUrl);

  function send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Buffer,
  ): Promise<number> {
    return new Promise((resolve) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: { ...headers, 'content-length': String(body.length) },
          timeout: 60_000,
        },
        (res) => {
          res.resume();
          res.on('end', () => done(res.statusCode ?? 0));
        },
      );
      const done = (status: number) => {
        requests += 1;
        if (status >= 500 || status === 0) fiveXx += 1;
        statuses[status] = (statuses[status] ?? 0) + 1;
        resolve(status);
      };
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', () => done(0));
      req.end(body);
    });
  }

  function signed(body: Buffer, path = '/webhooks/pms/acme'): Promise<number> {
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const key = Buffer.from(pmsSecret.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
    return send(
      'POST',
      path,
      {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': `v1,${mac}`,
      },
      body,
    );
  }

  const json = (v: unknown) => Buffer.from(JSON.stringify(v));
  const payment = (over: Record<string, unknown> = {}) =>
    json({
      type: 'rent_payment.received',
      data: {
        payment_id: `hostile-${randomUUID()}`,
        enrollment_id: 'enr-hostile',
        amount_cents: 100,
        paid_on: '2026-11-01',
        ...over,
      },
    });

  async function rssMb(): Promise<number | null> {
    try {
      const text = await (await fetch(`${receiverUrl}/metrics`)).text();
      const m = /^rentbridge_process_(?:process_)?resident_memory_bytes (\d+(?:\.\d+)?)/m.exec(text);
      return m ? Math.round(Number(m[1]) / 1e6) : null;
    } catch {
      return null;
    }
  }

  const rssBeforeMb = await rssMb();

  // The burst: 20 × 250 KB at once, and a small command behind it.
  const burst = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      signed(json({ type: 'inventory.snapshot', data: { n: i, blob: 'x'.repeat(250 * 1024) } })),
    ),
  );
  await signed(payment());
  const burstAt = Date.now();
  options.log(`hostile: burst answered ${burst.join(',')}`);
  let burstDrainMs: number | null = null;
  while (Date.now() - burstAt < 120_000) {
    if ((await options.unpublished().catch(() => 1)) === 0) {
      burstDrainMs = Date.now() - burstAt;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  // Near-limit bodies (the default limit is 256 KiB).
  for (const size of [256 * 1024 - 64, 256 * 1024, 256 * 1024 + 1]) {
    const head = '{"type":"bulk.snapshot","data":{"b":"';
    await signed(Buffer.from(`${head}${'y'.repeat(size - head.length - 3)}"}}`));
  }
  // Odd paths and encodings.
  for (const seg of ['%', '%E0%A4%A', '%zz', '..', '%2e%2e', '%00', 'acm%65', '%ff']) {
    await signed(payment(), `/webhooks/pms/${seg}`);
  }
  await send('GET', 'http://other.example/ops', {}, Buffer.alloc(0));
  // Long and dot ids; a partner record with a 3,000-character id (no partner secret here: 401).
  for (const bad of ['.', '..', 'a/b', 'i'.repeat(3000)]) {
    await signed(payment({ enrollment_id: bad }));
    await signed(payment({ payment_id: bad }));
  }
  // Bytes that are not UTF-8, signed over the bytes.
  await signed(
    Buffer.concat([Buffer.from('{"type":"x.y","data":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  );
  // Non-JSON bodies on the ops API (a dead letter that may not exist: 415 comes first).
  const auth = { authorization: `Bearer ${opsToken}` };
  for (const [type, body] of [
    ['application/x-www-form-urlencoded', '{"dry_run":true,"reason":"x"}'],
    ['text/plain', 'dry_run=true'],
  ] as const) {
    await send(
      'POST',
      '/ops/api/dead-letters/1/redrive',
      { ...auth, 'content-type': type },
      Buffer.from(body),
    );
    await send(
      'POST',
      '/ops/api/dead-letters/1/discard',
      { ...auth, 'content-type': type },
      Buffer.from(body),
    );
  }
  for (const q of ['search=%00', 'since=99999', 'search=%25_', 'x=%']) {
    await send('GET', `/ops/api/dead-letters?${q}`, auth, Buffer.alloc(0));
  }
  await send('GET', '/ops/api/dead-letters/%', auth, Buffer.alloc(0));

  const rssAfterMb = await rssMb();
  return { requests, fiveXx, burstDrainMs, rssBeforeMb, rssAfterMb, statuses };
}
