"""Whether a query asks about a time and nothing else: "what happened last week?",
"what did we talk about in March?", "anything new since Monday?".

Once its time phrases are taken out, every word left is a question word, a pronoun, an
auxiliary, a preposition or article, or a verb of happening or telling. Such a query
gives the vector and lexical steps nothing to match ("happened" is in few memories, and
the question's vector is near any question's): its answer is whatever occurred in that
time, so the search looks inside the interval first (search.engine). A query with any
other word ("what did I eat last week?") is ranked as usual, the time a boost.
"""

from __future__ import annotations

import re
from datetime import datetime

from memory_app.timeq.phrases import find_time_phrases

_QUESTION = "what which who whom whose where when why how anything something everything"
_PERSONS = "i me my mine we us our ours you your yours he him his she her they them their it its"
_AUXILIARIES = (
    "do does did done doing have has had having be is are was were been being will would "
    "can could shall should may might must"
)
_GLUE = (
    "a an the of to in on at for with from by about and or so up there that this these "
    "those then else again all any new other"
)
_HAPPENING = "happen happens happened happening go goes went going gone occur occurred"
_TELLING = (
    "talk talks talked talking discuss discussed say says said tell told mention mentioned "
    "chat chatted speak spoke ask asked share shared bring brought remind recap summarize "
    "summarise summary remember recall know knew show list give please thing things stuff"
)
GENERIC_WORDS = frozenset(
    " ".join((_QUESTION, _PERSONS, _AUXILIARIES, _GLUE, _HAPPENING, _TELLING)).split()
)

_WORD_RE = re.compile(r"[^\W_]+")


def asks_only_time(query: str, as_of: datetime) -> bool:
    """Whether `query` names a time (a phrase `find_time_phrases` reads against `as_of`)
    and, outside its time phrases, only `GENERIC_WORDS` (and letters alone: the "s" of
    "what's"). A digit left over is not generic: it may be a count or a name."""
    phrases = find_time_phrases(query, as_of)
    if not phrases:
        return False
    rest: list[str] = []
    begin = 0
    for phrase in phrases:
        rest.append(query[begin : phrase.span[0]])
        begin = phrase.span[1]
    rest.append(query[begin:])
    words = _WORD_RE.findall(" ".join(rest).lower())
    return all((len(word) == 1 and word.isalpha()) or word in GENERIC_WORDS for word in words)
