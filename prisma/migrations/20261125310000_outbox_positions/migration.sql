-- Where the relay's publish of each row landed on Kafka (issue 31: a trace names topic, partition
-- and offset, so the message can be found with a Kafka tool). Null for rows published before.
ALTER TABLE "outbox" ADD COLUMN "kafka_partition" INTEGER,
ADD COLUMN "kafka_offset" BIGINT;
