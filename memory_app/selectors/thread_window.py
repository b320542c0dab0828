"""A thread memory's lexical window: the memories around it in its thread whose words its
lexical text carries, so that a line answered or explained by its neighbours is found by
their words. The services write each window (memory_app.services.thread_writes); the
context's recall reads the same window back (memory_app.selectors.context.recall).
"""

THREAD_BEFORE = 2  # previous memories in a lexical window
THREAD_AFTER = 1  # following memories in a lexical window
