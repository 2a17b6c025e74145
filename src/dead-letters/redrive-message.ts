import type { IHeaders } from 'kafkajs';
import { CLOUDEVENT_CONTENT_TYPE, cloudEventHeaders, parseCloudEvent } from '../contracts/cloudevent.js';
import { topicName } from '../kafka/topics.js';
import { DLQ_HEADER, REDRIVE_HEADER } from './dead-letter-headers.js';
import type { DeadLetter } from './dead-letter-repository.js';

/** The message a redrive republishes: to the original topic, with the original key and headers. */
export interface RedriveMessage {
  topic: string;
  key: string | null;
  value: string;
  headers: IHeaders;
}

/** The topic to republish to: the original topic header, prefixed when written without it. */
export function redriveTopic(letter: DeadLetter, topicPrefix: string): string | null {
  const original = letter.originalTopic;
  if (!original) return null;
  return topicPrefix && original.startsWith(topicPrefix) ? original : topicName(topicPrefix, original);
}

function redriveHeaders(letter: DeadLetter, actor: string, at: Date, value: string): IHeaders {
  const headers: IHeaders = {};
  // The original message's own headers travel on (the trail: webhook-id, request-id); the
  // dead-letter ones describe the failure, not the command, and a consumer must not mistake a
  // redrive for a dead letter.
  for (const [name, value] of Object.entries(letter.headers)) {
    if (name.startsWith('dlq-') || name.startsWith('redrive-')) continue;
    headers[name] = value;
  }
  // The CloudEvents binding describes the value sent, which a correction may have changed.
  try {
    Object.assign(headers, cloudEventHeaders(parseCloudEvent(value)));
  } catch {
    headers['content-type'] ??= CLOUDEVENT_CONTENT_TYPE;
  }
  headers[REDRIVE_HEADER.redrivenFrom] = String(letter.id);
  headers[REDRIVE_HEADER.redrivenAt] = at.toISOString();
  headers[REDRIVE_HEADER.redrivenBy] = actor;
  return headers;
}

/** The letter's value (or its correction) to `topic`, with the redrive headers naming the letter. */
export function redriveMessage(
  letter: DeadLetter,
  topic: string,
  value: string,
  actor: string,
): RedriveMessage {
  return {
    topic,
    key: letter.headers[DLQ_HEADER.originalKey] ?? letter.key,
    value,
    headers: redriveHeaders(letter, actor, new Date(), value),
  };
}
