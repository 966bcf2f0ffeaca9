"""Realistic long exchanges for the long-message tests: what an IDE assistant answers."""

from __future__ import annotations

QUESTION = ("Our Django app started throwing 'remaining connection slots are reserved' errors "
            "under load after we moved to the new Postgres cluster. Can you figure out what "
            "is going on and give me a plan to fix it?")

DETAIL = ("For the first cutover we agreed to use the staging cluster called heron-stg-2, "
          "because it is the only one that already runs PgBouncer 1.21 in transaction mode.")

_PARTS = [
    "Here is what I found after reading `settings/production.py`, the Gunicorn config and the "
    "Postgres logs you pasted.\n\n"
    "## Diagnosis\n\n"
    "The error `FATAL: remaining connection slots are reserved for non-replication superuser "
    "connections` means the server hit `max_connections` minus `superuser_reserved_connections`. "
    "The new cluster has `max_connections = 200`, the old one had 500, and nothing else in the "
    "application changed. Every Gunicorn worker keeps its own persistent connection because "
    "`CONN_MAX_AGE = 600` is set, and you run 4 pods x 12 workers x 3 threads, so at peak the "
    "app alone can hold 144 connections. Celery adds 32 more (8 workers x concurrency 4) and the "
    "analytics read replica job opens another 20 when the nightly export runs. That is 196 "
    "before anybody opens `psql`.\n\n",
    "The spikes in the graph line up with deploys: during a rolling update the old and new "
    "pods overlap for about 90 seconds, so for that window the connection count doubles. That "
    "explains why the errors come in bursts right after each release and why they disappear "
    "on their own a couple of minutes later.\n\n"
    "## Why persistent connections make it worse\n\n"
    "With `CONN_MAX_AGE` Django reuses a connection across requests of the same thread, which "
    "saves the TCP and TLS handshake (about 8 ms on this network), but an idle thread still pins "
    "a server backend. Postgres backends are processes, each costs roughly 10 MB of RAM with your "
    "`work_mem` settings, so raising `max_connections` to 500 again would mostly trade one problem "
    "for memory pressure on the new, smaller instances.\n\n",
    "```python\n# settings/production.py (current)\nDATABASES = {\n    \"default\": {\n"
    "        \"ENGINE\": \"django.db.backends.postgresql\",\n        \"HOST\": env(\"PGHOST\"),\n"
    "        \"CONN_MAX_AGE\": 600,\n        \"OPTIONS\": {\"sslmode\": \"require\"},\n    }\n}\n"
    "```\n\n"
    "## Options\n\n"
    "1. Lower `CONN_MAX_AGE` to 0. Simple, but every request pays the handshake again and p95 "
    "latency on the checkout endpoint would go up by roughly 10 to 15 ms.\n"
    "2. Reduce workers or threads. That caps throughput, which is the opposite of why you moved.\n"
    "3. Put a pooler in front of Postgres. PgBouncer in transaction mode lets hundreds of client "
    "connections share a few dozen server connections.\n\n"
    "Option 3 is the standard answer at this scale and it is what I recommend.\n\n",
    "## What changes in the application\n\n"
    "Transaction pooling breaks anything that relies on session state between transactions. "
    "I grepped the codebase: there are two places that matter. `reports/locks.py` takes a "
    "session-level advisory lock with `pg_advisory_lock`, which must become "
    "`pg_advisory_xact_lock` inside `transaction.atomic()`. And the server-side cursors used by "
    "`export_orders` need `DISABLE_SERVER_SIDE_CURSORS = True`, otherwise the named cursor can "
    "land on a different backend than the one that declared it.\n\n"
    "```python\n# settings/production.py (proposed)\nDATABASES[\"default\"].update({\n"
    "    \"HOST\": env(\"PGBOUNCER_HOST\"),\n    \"PORT\": 6432,\n    \"CONN_MAX_AGE\": 0,\n"
    "    \"DISABLE_SERVER_SIDE_CURSORS\": True,\n})\n```\n\n",
    "Prepared statements are not an issue for you: psycopg 3 only prepares after five "
    "executions of the same query by default and Django does not enable it, so you do not need "
    "`prepare_threshold=None`, but setting it explicitly does no harm.\n\n"
    "## PgBouncer settings\n\n"
    "```ini\n[pgbouncer]\npool_mode = transaction\nmax_client_conn = 1000\n"
    "default_pool_size = 40\nreserve_pool_size = 10\nserver_idle_timeout = 300\n"
    "server_reset_query = DISCARD ALL\n```\n\n"
    "A pool of 40 per database and user leaves room for migrations, the replica job and your "
    "own sessions. Keep an eye on `cl_waiting` in `SHOW POOLS`; if it stays above zero during "
    "peak, raise the pool size in steps of 10.\n\n",
    "## Trying it locally\n\n"
    "You can reproduce the failure and the fix on a laptop. Start Postgres with a tiny "
    "connection limit and PgBouncer next to it:\n\n"
    "```yaml\n# docker-compose.pool.yml\nservices:\n  db:\n    image: postgres:16\n"
    "    command: [\"postgres\", \"-c\", \"max_connections=20\"]\n  pgbouncer:\n"
    "    image: edoburu/pgbouncer\n    environment:\n      POOL_MODE: transaction\n"
    "      DEFAULT_POOL_SIZE: \"5\"\n    ports: [\"6432:6432\"]\n```\n\n"
    "Then run `locust -f perf/checkout.py --users 60` once against port 5432 and once against "
    "6432. Against Postgres directly you will see the same FATAL error within seconds; through "
    "the pooler the requests queue briefly and all succeed. The test suite also passes with "
    "`DATABASES[\"default\"][\"PORT\"] = 6432`, which is a good sign that nothing else holds "
    "session state.\n\n"
    "## Rollout plan\n\n"
    "Do this in three steps so each one can be reverted on its own. First, ship the code changes "
    "for the advisory lock and the cursors behind no flag at all: they are correct with or "
    "without a pooler. Second, point one environment at PgBouncer and run the load test from "
    "last sprint against it for an hour. " + DETAIL + " Third, switch production during the "
    "Tuesday maintenance window and keep the old DSN in the secret store so that a rollback is "
    "one environment variable and a restart.\n\n",
    "## Monitoring\n\n"
    "Add three panels to the database dashboard: server connections by state from "
    "`pg_stat_activity`, `cl_waiting` and `sv_active` from PgBouncer's stats, and the p95 of "
    "the checkout endpoint. Alert when `cl_waiting` is above zero for five minutes. If the "
    "errors come back after the switch, it is almost always a job that bypasses the pooler "
    "with its own DSN; the replica export is the first suspect.\n\n"
    "## Summary\n\n"
    "The new cluster's lower `max_connections` plus persistent connections per thread and the "
    "deploy overlap exceed the limit. A transaction-mode pooler fixes it without buying a "
    "bigger instance; two code changes make the app safe under transaction pooling, and the "
    "rollout can be reverted at every step. Tell me if you want me to open the pull request "
    "with the settings and the lock change.",
]
ANSWER = "".join(_PARTS)

# short turns about related things (deploys, staging, databases) that a head-only vector of
# the answer loses to
DISTRACTORS = [
    "The staging deploy failed again this morning because the migrations ran twice.",
    "Which branch should I deploy to staging for the design review?",
    "I restarted the Celery workers, the queue is draining now.",
    "We should pick a date for the first production cutover of the billing service.",
    "The load test from last sprint is in the perf folder, use the checkout scenario.",
    "Remember to rotate the database password in the secret store next week.",
    "Let's keep the staging clusters on the old Postgres version until the audit is done.",
    "I set up a new staging cluster for the mobile team yesterday.",
]
