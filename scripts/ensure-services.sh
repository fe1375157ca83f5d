#!/usr/bin/env bash
# Starts the local Redis and PostgreSQL the integration tests use, if they are not running.
# The commands are this machine kind's own (see the env notes); elsewhere, start them yourself.
set -u

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {
  for _ in $(seq 1 50); do up "$1" && return 0; sleep 0.2; done
  echo "ensure-services: nothing answers on 127.0.0.1:$1" >&2
  return 1
}

if ! up 6379; then
  echo "ensure-services: starting Redis" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
    --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null
  wait_for 6379
fi

if ! up 5432; then
  echo "ensure-services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  wait_for 5432
fi
exit 0
