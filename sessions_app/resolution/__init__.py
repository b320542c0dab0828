"""Reference resolution: which item does "the first one", "it" or "the Dell" mean?

Pure code, no database: it takes the session's fetched items, the order of the last
results and the focus, and answers a `Resolution`. Keeping it pure makes it cheap to
test with hundreds of phrasings and lets other callers (context assembly, an agent-side
SDK) reuse it. `sessions_app.services.resolution` wraps it for a stored session.

The referring expression is found inside a whole utterance ("Tell me about the first
one!", "add the Dell to my list"), so rules look for their own patterns and ignore the
words around them. The rules, in the order they are tried (the first that applies wins):

1. `mpn`: the utterance contains an item's MPN verbatim.
2. `ordinal_from_end`: "second to last", "penultimate", "third from the end".
3. `ordinal`: "first", "2nd", "#3", "number four", "item 5", "top one"; also "last".
   Positions count in the last results; with a name ("the second Dell") they count
   among the last results that match the name.
0. `comparative`: "cheaper than the Dell", "a bigger one", "a lighter HP": relative to
   the item after "than" (resolved by these same rules) or else to the focus; the
   closest item beyond it wins.
4. `superlative`: "the cheapest", "the lightest", "the biggest screen" over numeric
   data fields (price, weight, screen…), among the last results (or all items if no
   results are stored), narrowed by a name if one is given ("the cheapest Dell").
5. `name`: brands, models and fragments matched fuzzily (misspellings tolerated) against
   the item's name, type, MPN and descriptive data fields.
6. `focus`: pronouns and demonstratives ("it", "this", "that one", "this laptop").

Several equally good items → `ambiguous`; nothing → `unresolved`; both with candidates.

The package: `vocabulary` (the words and patterns of each rule), `items` (the item, the
answer, and reading names and numbers from items), `rules` (the resolver).
"""

from sessions_app.resolution.items import Item, Resolution, Status, attribute_value
from sessions_app.resolution.rules import resolve_reference

__all__ = ["Item", "Resolution", "Status", "attribute_value", "resolve_reference"]
