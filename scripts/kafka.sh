#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, single node) without Docker, from Maven Central's jars.
#
#   scripts/kafka.sh start     fetch the jars once, format storage once, start, wait until it answers
#   scripts/kafka.sh stop      stop it (SIGTERM, then SIGKILL after 30 s)
#   scripts/kafka.sh restart
#   scripts/kafka.sh status    exit 0 when the broker answers on its port
#   scripts/kafka.sh logs      print the end of the broker's log
#
# Idempotent: `start` on a running broker does nothing. Everything lives under KAFKA_DIR
# (default: .kafka/ in the repository): jars/, data/, server.properties, kafka.pid, kafka.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_DIR="${KAFKA_DIR:-$(cd "$here/.." && pwd)/.kafka}"
KAFKA_HOST="${KAFKA_HOST:-127.0.0.1}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP="${KAFKA_HEAP:--Xms256m -Xmx1g}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

jars="$KAFKA_DIR/jars"
data="$KAFKA_DIR/data"
props="$KAFKA_DIR/server.properties"
pidfile="$KAFKA_DIR/kafka.pid"
logfile="$KAFKA_DIR/kafka.log"

log() { echo "kafka.sh: $*" >&2; }

answers() { (exec 3<>"/dev/tcp/$KAFKA_HOST/$KAFKA_PORT") 2>/dev/null; }

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

fetch_jars() {
  if [ -f "$jars/.complete" ]; then return; fi
  log "fetching Apache Kafka jars from Maven Central into $jars"
  mkdir -p "$jars"
  mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$jars" -DincludeScope=runtime
  touch "$jars/.complete"
}

write_config() {
  mkdir -p "$data"
  cat >"$props" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data
num.partitions=3
# rentbridge creates its topics itself, at start: a typo must not create a topic.
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
log.retention.hours=168
PROPS
}

format_storage() {
  if [ -f "$data/meta.properties" ]; then return; fi
  log "formatting KRaft storage in $data"
  java -cp "$jars/*" kafka.tools.StorageTool format \
    -t "$(java -cp "$jars/*" kafka.tools.StorageTool random-uuid)" -c "$props" >/dev/null
}

start() {
  if running_pid >/dev/null && answers; then
    log "already running (pid $(running_pid)) on $KAFKA_HOST:$KAFKA_PORT"
    return
  fi
  if answers; then
    log "something already answers on $KAFKA_HOST:$KAFKA_PORT; using it"
    return
  fi
  command -v java >/dev/null || { log "java is required (Java 17)"; exit 1; }
  command -v mvn >/dev/null || { log "mvn is required to fetch the jars"; exit 1; }
  fetch_jars
  write_config
  format_storage
  log "starting broker on $KAFKA_HOST:$KAFKA_PORT (log: $logfile)"
  # shellcheck disable=SC2086
  nohup java $KAFKA_HEAP -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$here/kafka/log4j.properties" \
    -cp "$jars/*" kafka.Kafka "$props" >>"$logfile" 2>&1 &
  echo $! >"$pidfile"
  local started=$SECONDS waited=0
  until answers && grep -q "Kafka Server started" "$logfile"; do
    if ! running_pid >/dev/null; then
      log "broker exited during start; last lines of $logfile:"
      tail -n 40 "$logfile" >&2
      exit 1
    fi
    if [ "$waited" -ge "$START_TIMEOUT" ]; then
      log "broker did not answer within ${START_TIMEOUT}s; last lines of $logfile:"
      tail -n 40 "$logfile" >&2
      exit 1
    fi
    sleep 0.2
    waited=$((SECONDS - started))
  done
  waited=$((SECONDS - started))
  log "broker ready after ${waited}s"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running"
    rm -f "$pidfile"
    return
  fi
  log "stopping broker (pid $pid)"
  kill "$pid"
  # Checked every 0.1 s: a single-node broker's controlled shutdown takes about a second, and
  # `rentbridge start` waits for it within its 5 s stop.
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "broker still running after 30s; killing"
    kill -9 "$pid" || true
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) if answers; then log "answers on $KAFKA_HOST:$KAFKA_PORT"; else log "not answering"; exit 1; fi ;;
  logs) tail -n "${2:-100}" "$logfile" ;;
  *) echo "usage: $0 start|stop|restart|status|logs [lines]" >&2; exit 2 ;;
esac
