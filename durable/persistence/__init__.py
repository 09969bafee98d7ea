"""Persistence: LangGraph's checkpointer and store on the ORM tables of ``durable.models``,
with their serializer and metadata filters. Imports nothing of the engine or the surfaces."""
