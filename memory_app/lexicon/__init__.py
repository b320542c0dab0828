"""BM25's per-user term statistics (`models`)."""
