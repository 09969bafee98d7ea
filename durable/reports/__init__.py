"""What only reads and explains, beside the engine (which starts, runs and ends runs).
Reports import the engine and persistence; the engine never imports them.

- ``diagnosis``: how a thread stands, with its next action; the threads-list filter by it.
- ``divergence``: where a replayed or forked branch first did something else than the
  branch it left.
- ``drift``: the threads whose newest checkpoint no longer fits the deployed graph, and the
  fork that fits one again (whether one checkpoint fits, and the refusal of runs from one
  that does not, are the engine's: ``durable.engine.fit``).
- ``waiting``: the threads waiting for a human, as a queue (the inbox).
- ``figures``: what the console's Operations page counts.
"""

from durable.reports.diagnosis import DIAGNOSES, Diagnosis, diagnose, filter_threads
from durable.reports.divergence import Divergence, Step, divergence, run_divergence
from durable.reports.drift import Migration, drifted_threads, migration, version_differs
