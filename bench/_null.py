"""A source and sink that do nothing, for timing the engine without a broker or a file."""


class Null:
    """A source that never has an event and a sink that drops what it is sent (both ``Source`` and ``Sink``)."""

    exhausted = False

    def poll(self, max_records, timeout):
        return []

    def send(self, value, key=None):
        """Dropped."""

    def send_many(self, values, keys):
        """Dropped."""

    def flush(self):
        """Nothing is waiting."""

    def commit(self, positions):
        """Nothing to commit."""

    def seek(self, positions):
        """Nothing to move."""

    def close(self):
        """Nothing is open."""
