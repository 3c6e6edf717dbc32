"""The foundation: load a model, extract its attention, switch heads off, remove
positions, stream means. Imports nothing else of attnlab."""
