"""Fault drills: a graph of the project's own, run on the deployment's real workers, whose
nodes cause faults (a pool process killed mid-node, a node over its ``TimeoutPolicy``, a
``RetryPolicy`` exhausted into its ``error_handler``, a database connection dropped, a
worker drained by SIGTERM), and checks that what LangGraph and this project promise
holds there (``runner``). ``manage.py drill`` and the admin's "Run fault drills" button
(``tasks.run_drills``, on a worker) run them; the Operations page shows the last
reports.

The drill graph (``graph``) is registered as ``durable.graphs.DRILL_GRAPH`` but is not
one of the graphs tenants see; its threads live under the drill tenant and are deleted
after each drill run.
"""

from durable.drills.runner import (
    DRILL_TENANT,
    DRILLS,
    PROMISES,
    Result,
    UnknownDrill,
    clean_up,
    drill_tenant,
    last_reports,
    report_text,
    run_drills,
)

__all__ = [
    "DRILL_TENANT",
    "DRILLS",
    "PROMISES",
    "Result",
    "UnknownDrill",
    "clean_up",
    "drill_tenant",
    "last_reports",
    "report_text",
    "run_drills",
]
