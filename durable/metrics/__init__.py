"""Prometheus metrics of durable execution: what ``GET /metrics`` serves.

Two sources, chosen by where a value can be known truthfully across many web and worker
processes on many machines:

- **The database, read at scrape time** (``durable.metrics.database.DatabaseCollector``):
  every series about runs, threads, checkpoints, leases, interrupts, requeues and
  retention. Any web process answers the same for the whole deployment, whatever worker
  ran what, and nothing is lost when a process restarts. Counters (``*_total``) count the
  rows stored, so they are cumulative since the deployment began, except that retention
  deleting runs or threads lowers them (Prometheus reads that as a counter reset). The
  run duration and queue wait histograms are cumulative over every stored run; the
  super-steps histogram is a gauge histogram over the latest ended runs
  (``SUPERSTEP_RUNS``), since counting checkpoints per run over all history at every
  scrape would not be bounded.
- **In-process metrics** (``durable.metrics.process``): what only a process knows at the
  moment it happens: checkpoint write latency and bytes per checkpoint write, store
  operation latency, open event streams, the reaper's redispatches and retention sweeps.
  With more than one process (uvicorn workers, Celery's prefork pool) they need
  ``prometheus_client``'s multiprocess mode: set ``PROMETHEUS_MULTIPROC_DIR`` to a
  directory shared by the web and worker processes **of one machine**, emptied before
  they start. Each machine's web process then serves its machine's in-process values;
  without the variable a web process serves only its own (a worker's are not seen).
  Checkpoints are saved in the workers, so a worker machine needs a web process of its
  own to serve them. The
  open streams gauge counts live processes' streams (``livesum``): a web process killed
  with streams open leaves them counted until the directory is emptied, or until
  ``prometheus_client.multiprocess.mark_process_dead(pid)`` is called for it.

``durable.metrics.exposition.render()`` makes the text exposition of both. This package
imports nothing itself, so that ``process`` loads before Django's models are ready.
"""
