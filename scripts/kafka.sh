#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, single node) without Docker, from Maven Central's jars.
#
#   scripts/kafka.sh start     fetch the jars once, format storage once, start, wait until it answers
#   scripts/kafka.sh stop      stop it (SIGTERM, then SIGKILL after 30 s)
#   scripts/kafka.sh restart
#   scripts/kafka.sh status    exit 0 when the broker answers on its port
#   scripts/kafka.sh logs      print the end of the broker's log
#
#   scripts/kafka.sh cluster start|stop|status     a three-broker cluster (see cluster_usage below)
#   scripts/kafka.sh cluster kill N|revive N       crash broker N (SIGKILL) / start it again
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
# Logs closed (flushed) by four threads at shutdown, not one: npm start stops within seconds.
num.recovery.threads.per.data.dir=4
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

# ---------------------------------------------------------------------------------------------
# A three-broker KRaft cluster for outage tests: one controller (its own process, so killing
# brokers never costs the controller quorum) and brokers 1..3, replication 3, min.insync.replicas 2,
# as a production cluster would run. It lives beside the single broker (other ports, other data)
# and shares its jars.
#   KAFKA_CLUSTER_DIR          default: $KAFKA_DIR/cluster
#   KAFKA_CLUSTER_PORT         first broker's port (default 19092; brokers take PORT, PORT+1, PORT+2)
#   KAFKA_CLUSTER_CONTROLLER_PORT  default 19192
# `cluster status` prints the bootstrap list (host:port,host:port,host:port) and exits 0 when every
# broker answers.
CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$KAFKA_DIR/cluster}"
CLUSTER_PORT="${KAFKA_CLUSTER_PORT:-19092}"
CLUSTER_CONTROLLER_PORT="${KAFKA_CLUSTER_CONTROLLER_PORT:-19192}"
CLUSTER_HEAP="${KAFKA_CLUSTER_HEAP:--Xms128m -Xmx512m}"
CLUSTER_BROKERS=3

node_dir() { echo "$CLUSTER_DIR/node-$1"; }
broker_port() { echo $((CLUSTER_PORT + $1 - 1)); }
port_answers() { (exec 3<>"/dev/tcp/$KAFKA_HOST/$1") 2>/dev/null; }
node_pid() {
  local f
  f="$(node_dir "$1")/kafka.pid"
  [ -f "$f" ] || return 1
  local pid
  pid="$(cat "$f")"
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}
bootstrap() {
  local list="" n
  for n in $(seq 1 $CLUSTER_BROKERS); do list="$list${list:+,}$KAFKA_HOST:$(broker_port "$n")"; done
  echo "$list"
}

cluster_config() {
  local node="$1" dir voters="100@$KAFKA_HOST:$CLUSTER_CONTROLLER_PORT"
  dir="$(node_dir "$node")"
  mkdir -p "$dir/data"
  if [ "$node" = 0 ]; then
    cat >"$dir/server.properties" <<PROPS
process.roles=controller
node.id=100
controller.quorum.voters=$voters
listeners=CONTROLLER://$KAFKA_HOST:$CLUSTER_CONTROLLER_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT
log.dirs=$dir/data
# The controller fences a broker whose heartbeats stop after this (Kafka's default: 9 s): until
# then a killed broker still leads its partitions in everyone's metadata and stays in their ISR,
# so no acks=all write reaches them (decision 056). A controller setting: in a broker's file it
# does nothing.
broker.session.timeout.ms=3000
PROPS
    return
  fi
  local port
  port="$(broker_port "$node")"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker
node.id=$node
controller.quorum.voters=$voters
listeners=PLAINTEXT://$KAFKA_HOST:$port
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=3
auto.create.topics.enable=false
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
group.initial.rebalance.delay.ms=0
# A heartbeat to the controller every 500 ms: a live broker has six beats to be late before the
# controller's broker.session.timeout.ms (3 s, node 0's file) fences it.
broker.heartbeat.interval.ms=500
PROPS
}

cluster_start_node() {
  local node="$1" dir
  dir="$(node_dir "$node")"
  if node_pid "$node" >/dev/null; then return; fi
  cluster_config "$node"
  if [ ! -f "$dir/data/meta.properties" ]; then
    java -cp "$jars/*" kafka.tools.StorageTool format -t "$(cat "$CLUSTER_DIR/cluster.id")" \
      -c "$dir/server.properties" >/dev/null 2>&1
  fi
  # shellcheck disable=SC2086
  nohup java $CLUSTER_HEAP -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$here/kafka/log4j.properties" \
    -cp "$jars/*" kafka.Kafka "$dir/server.properties" >>"$dir/kafka.log" 2>&1 &
  echo $! >"$dir/kafka.pid"
}

cluster_wait_node() {
  local node="$1" dir waited=0 port
  dir="$(node_dir "$node")"
  port="$CLUSTER_CONTROLLER_PORT"
  [ "$node" = 0 ] || port="$(broker_port "$node")"
  until port_answers "$port" && grep -q "Kafka Server started" "$dir/kafka.log"; do
    if ! node_pid "$node" >/dev/null; then
      log "cluster node $node exited during start; last lines of $dir/kafka.log:"
      tail -n 40 "$dir/kafka.log" >&2
      exit 1
    fi
    if [ "$waited" -ge "$START_TIMEOUT" ]; then
      log "cluster node $node did not answer within ${START_TIMEOUT}s; see $dir/kafka.log"
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

cluster_start() {
  command -v java >/dev/null || { log "java is required (Java 17)"; exit 1; }
  command -v mvn >/dev/null || { log "mvn is required to fetch the jars"; exit 1; }
  fetch_jars
  mkdir -p "$CLUSTER_DIR"
  [ -f "$CLUSTER_DIR/cluster.id" ] ||
    java -cp "$jars/*" kafka.tools.StorageTool random-uuid 2>/dev/null >"$CLUSTER_DIR/cluster.id"
  local n
  for n in $(seq 0 $CLUSTER_BROKERS); do cluster_start_node "$n"; done
  for n in $(seq 0 $CLUSTER_BROKERS); do cluster_wait_node "$n"; done
  log "cluster ready: $(bootstrap)"
  bootstrap
}

cluster_stop_node() {
  local node="$1" signal="${2:-TERM}" pid
  pid="$(node_pid "$node")" || return 0
  kill "-$signal" "$pid"
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$(node_dir "$node")/kafka.pid"
}

cluster() {
  case "${1:-}" in
    start) cluster_start ;;
    stop)
      local n
      # Brokers first, the controller last, so the brokers can shut down cleanly.
      for n in $(seq $CLUSTER_BROKERS -1 1); do cluster_stop_node "$n" & done
      wait
      cluster_stop_node 0
      ;;
    wipe) cluster stop; rm -rf "$CLUSTER_DIR" ;;
    kill)
      [[ "${2:-}" =~ ^[1-3]$ ]] || { echo "usage: $0 cluster kill 1|2|3" >&2; exit 2; }
      cluster_stop_node "$2" KILL
      log "broker $2 killed"
      ;;
    revive)
      [[ "${2:-}" =~ ^[1-3]$ ]] || { echo "usage: $0 cluster revive 1|2|3" >&2; exit 2; }
      cluster_start_node "$2"
      cluster_wait_node "$2"
      log "broker $2 answers again"
      ;;
    status)
      local n ok=0
      for n in $(seq 1 $CLUSTER_BROKERS); do
        if port_answers "$(broker_port "$n")"; then log "broker $n answers on $(broker_port "$n")"; else log "broker $n down"; ok=1; fi
      done
      bootstrap
      return $ok
      ;;
    *) echo "usage: $0 cluster start|stop|wipe|status|kill N|revive N" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) if answers; then log "answers on $KAFKA_HOST:$KAFKA_PORT"; else log "not answering"; exit 1; fi ;;
  logs) tail -n "${2:-100}" "$logfile" ;;
  cluster) shift; cluster "$@" ;;
  *) echo "usage: $0 start|stop|restart|status|logs [lines]|cluster …" >&2; exit 2 ;;
esac
