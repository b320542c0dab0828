"""Bounds of a named context policy's values (seed 004), in one place: the tenant's
policy rows (`TenantContextPolicy` validators), the REST body that writes them and the
context query that overrides them, and the context assembly's clamp all read these."""

KEEP_LAST_TURNS_MAX = 1000  # newest turns reserved verbatim
MEMORY_LIMIT_MAX = 100  # K: long-term memories searched
PREDECESSOR_DEPTH_MAX = 20  # rotated sessions walked back, whatever the policy
