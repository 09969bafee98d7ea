"""What the console's pages show, computed in Python so that views stay thin and
templates only lay out: one module per thing shown.

- ``values``: a state value shortened, highlighted, or read as a transcript of messages
- ``interrupts``: what an interrupt payload asks (HITL actions, agent-inbox requests)
- ``checkpoint``: one checkpoint's tasks, writes, writers, neighbours and what an update
  of it would run next; ``diffs``: two compared
- ``tree`` (rows and HTML) and ``lanes`` (the layout): a page of the checkpoint tree
- ``graph``: the picture of a graph; ``runs``: a run's events in words
- ``inbox``: an interrupted thread's entry; ``threads``: the threads list's status tabs
- ``store``: the store's namespace tree; ``audit``: the audit trail as CSV
- ``links``: links to checkpoints and their JSON, with their query strings
"""
