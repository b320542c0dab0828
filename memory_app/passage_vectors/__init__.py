"""A memory's passages and their vectors: a second look for the vector side of search.

One vector per memory averages a whole message into one point, so a sentence said in
passing ("By the way, I volunteered at the film festival") sits far from a question
about it. A memory of several sentences is also cut into passages (`text`: sentences
grouped to a dozen words or more), each embedded with the memory (`vectors`, in the same
embedding call as the memory's own vector) and stored in `memory_passage` (`models`,
written by `writes`, deleted with the memory). The search's semantic signal of a memory
is the best cosine of the query and the memory or any of its passages
(memory_app.selectors.search.pool). Evidence: docs/decisions/memory-passage-vectors.md.
"""
