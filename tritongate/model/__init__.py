"""The documents the tool writes, one type each: the value in memory, its validator and its
serialiser. Every other layer reads and writes files through these types."""
