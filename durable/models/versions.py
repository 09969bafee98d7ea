"""``GraphVersion``: the structure of a registered graph as some process deployed it, so
that a thread written by an older version can be told apart from what runs now
(``durable.engine.versions`` records them, ``durable.engine.fit`` compares them)."""

from django.db import models


class GraphVersion(models.Model):
    """One structure of graph ``graph``: its nodes, edges and the JSON Schemas of its
    state, input and output, identified by ``digest`` (SHA-256 of that structure as
    canonical JSON). ``number`` counts the graph's versions in the order they were first
    seen (1, 2, ...); ``name`` (``v2-1a2b3c4``) is what an operator reads.

    ``state_schema`` is ``{"type": "object", "properties": {key: schema}, "required":
    [...]}``, each property a standalone JSON Schema of the value its channel keeps (its
    own ``$defs``), ``{}`` where the type has none; ``combined_keys`` the keys whose
    channel combines updates with a reducer. ``edges`` are ``[source, target]`` pairs.
    Not a tenant's: every tenant runs the same deployed code."""

    graph = models.CharField(max_length=100)
    digest = models.CharField(max_length=64)
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=40)
    nodes = models.JSONField(default=list)
    edges = models.JSONField(default=list)
    state_schema = models.JSONField(default=dict)
    combined_keys = models.JSONField(default=list)
    input_schema = models.JSONField(null=True, blank=True)
    output_schema = models.JSONField(null=True, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["graph", "number"]
        constraints = [
            models.UniqueConstraint(fields=["graph", "digest"], name="graph_version_digest"),
            models.UniqueConstraint(fields=["graph", "number"], name="graph_version_number"),
        ]

    def __str__(self):
        return f"{self.graph} {self.name}"

    @property
    def state_keys(self) -> list[str]:
        return list((self.state_schema or {}).get("properties", {}))

    @property
    def required_keys(self) -> list[str]:
        return list((self.state_schema or {}).get("required", []))
