"""`bulkhead doctor`: walk the path a request of a route takes and say where it breaks (`walk.py`)."""
