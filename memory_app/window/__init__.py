"""Pure logic of the short-term window: token counting, summaries, milestones, packing.

Nothing here touches the database or Django settings, so it is testable and reusable
from services, benchmarks and management commands alike."""
