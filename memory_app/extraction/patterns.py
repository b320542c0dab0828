# ruff: noqa: E501 - the rule table keeps each regex on one line, to be read as a table
"""The heuristic extractor's rules: what a first-person statement of a fact or a durable
preference looks like, and the words that tell such a statement from a reaction.

Each rule is matched at the start of a clause, after the lead-in words a chat line
starts with ("Oh, and btw, I live in…"); anything else before the subject (a condition,
a reporting verb, a question) means the rule does not apply. A rule's `kind` says how
its value is checked (see `heuristic.value_ok`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_app.extraction.vocabulary import DIETS, OCCUPATIONS
from memory_app.extraction.vocabulary import words as _words
from memory_app.models import MemoryType

_F, _P, _R = (str(t.value) for t in (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.PROFILE))


@dataclass(frozen=True)
class Rule:
    key: str
    type: str
    pattern: re.Pattern[str]
    summary: str  # format fields: the rule's named groups, `value` among them
    kind: str  # name | place | proper | thing | free | language | none
    tags: tuple[str, ...]
    importance: float
    confidence: float


def word_set(words: str) -> frozenset[str]:
    """A vocabulary written as one space-separated string."""
    return frozenset(words.split())


I_AM = r"I(?:'m|\s+am|m|'ve\s+been|\s+have\s+been)"
I_HAVE = r"(?:I|we)(?:'ve\s+got|'ve|\s+have\s+got|\s+have|\s+own)"
ADV = r"(?:(?:really|absolutely|totally|truly|just|also|do|genuinely|honestly|actually|kinda|still|seriously|definitely|kind\s+of|so|very\s+much)\s+)*"
NUM = _words("a", "an", "one", "two", "three", "four", "five", "six", r"\d{1,2}")
RELATIVES = _words(
    "wife", "husband", "partner", "spouse", "son", "daughter", "boyfriend", "girlfriend",
    "fianc[eé]e?", "brother", "sister", "mom", "mum", "mother", "dad", "father",
    "grandma", "grandmother", "grandpa", "grandfather", "twin", "kid", "child", "baby",
    "stepson", "stepdaughter", "niece", "nephew", "aunt", "uncle", "cousin",
    "best friend", "roommate", "flatmate",
)  # fmt: skip
PETS = _words(
    "dog", "puppy", "pup", "cat", "kitten", "rabbit", "bunny", "hamster", "parrot", "bird",
    "goldfish", "fish", "turtle", "tortoise", "snake", "lizard", "gecko", "horse", "pony",
    "guinea pig", "ferret", "retriever", "labrador", "lab", "poodle", "beagle", "terrier",
    "husky", "corgi", "dachshund", "bulldog", "shepherd", "spaniel", "collie", "pug",
    "chihuahua", "tabby", "budgie", "cockatiel",
)  # fmt: skip
POSSESSIONS = _words(
    "car", "bike", "bicycle", "e-bike", "motorbike", "motorcycle", "scooter", "van",
    "truck", "pickup", "house", "apartment", "flat", "condo", "cabin", "boat", "laptop",
    "macbook", "iphone", "android phone", "pixel", "ipad", "tablet", "kindle", "ps5",
    "playstation", "xbox", "nintendo switch", "piano", "guitar", "camera", "drone",
    "3d printer", "garden", "allotment", "tesla", "prius", "treadmill", "espresso machine",
)  # fmt: skip
HOBBIES_PLAYED = _words(
    "guitar", "piano", "violin", "viola", "cello", "drums", "bass", "saxophone", "sax",
    "flute", "clarinet", "trumpet", "ukulele", "harp", "banjo", "tennis", "football",
    "soccer", "basketball", "volleyball", "baseball", "softball", "hockey", "rugby",
    "cricket", "golf", "badminton", "squash", "padel", "pickleball", "chess", "poker",
    "bridge", "video games", "board games", "dnd", "d&d", "dungeons (?:and|&) dragons",
    "ping pong", "table tennis", "handball", "water polo",
)  # fmt: skip
OUTINGS = _words(
    "hiking", "running", "jogging", "climbing", "bouldering", "swimming", "fishing",
    "camping", "surfing", "skiing", "snowboarding", "cycling", "biking", "sailing",
    "kayaking", "dancing", "skating", "rowing", "birdwatching", "diving", "scuba diving",
)  # fmt: skip
CONDITIONS = _words(
    "(?:type (?:1|2|one|two) )?diabetes", "asthma", "celiac(?: disease)?",
    "coeliac(?: disease)?", "adhd", "autism", "epilepsy", "migraines", "arthritis",
    "high blood pressure", "hypertension", "a heart condition", "crohn's(?: disease)?",
    "ibs", "lupus", "psoriasis", "eczema", "tinnitus", "sleep apnea", "a bad back",
    "a bad knee", "dyslexia", "multiple sclerosis", "ms", "pcos", "endometriosis",
    "chronic (?:pain|fatigue)", "long covid", "a pacemaker", "hearing aids",
)  # fmt: skip
HEALTH_STATES = _words(
    "diabetic", "pre-diabetic", "asthmatic", "epileptic", "celiac", "coeliac", "pregnant",
    "colou?r[ -]?blind", "deaf", "hard of hearing", "dyslexic", "autistic", "anemic",
    "anaemic", "in a wheelchair", "a wheelchair user", "immunocompromised",
    "short-sighted", "nearsighted", "long-sighted", "left-handed",
)  # fmt: skip
BUSINESSES = _words(
    "shop", "store", "business", "company", "studio", "bakery", "caf[eé]", "restaurant",
    "bar", "pub", "farm", "startup", "agency", "clinic", "salon", "gym", "blog", "podcast",
    "channel", "newsletter", "charity", "nonprofit", "practice", "firm", "consultancy",
    "workshop", "b&b", "bnb", "hostel", "food truck", "bookshop", "bookstore", "nursery",
    "daycare", "school", "team", "department", "lab", "choir", "book club", "kitchen",
)  # fmt: skip
DEMONYMS = _words(
    "American", "Canadian", "Mexican", "Brazilian", "Argentinian", "Argentine", "Chilean",
    "Colombian", "Peruvian", "British", "English", "Scottish", "Welsh", "Irish", "French",
    "German", "Dutch", "Belgian", "Swiss", "Austrian", "Italian", "Spanish", "Portuguese",
    "Greek", "Turkish", "Polish", "Czech", "Hungarian", "Romanian", "Ukrainian", "Russian",
    "Swedish", "Norwegian", "Danish", "Finnish", "Icelandic", "Australian", "Kiwi",
    "Indian", "Pakistani", "Bangladeshi", "Chinese", "Japanese", "Korean", "Vietnamese",
    "Thai", "Filipino", "Indonesian", "Malaysian", "Nigerian", "Kenyan", "Ghanaian",
    "Ethiopian", "Egyptian", "Moroccan", "South African", "Israeli", "Lebanese", "Iranian",
    "Persian", "Cuban", "Jamaican", "Puerto Rican", "Venezuelan", "Croatian", "Serbian",
)  # fmt: skip
LANGUAGES = word_set(
    "english spanish portuguese french german italian dutch mandarin chinese cantonese "
    "japanese korean hindi arabic russian polish swedish norwegian danish finnish turkish "
    "greek hebrew urdu bengali vietnamese thai tagalog swahili catalan basque ukrainian "
    "czech hungarian romanian farsi persian punjabi tamil indonesian malay irish welsh "
    "gaelic asl sign"
)
HABIT_VERBS = _words(
    "take", "fly", "book", "choose", "order", "get", "buy", "drink", "eat", "wear",
    "pick", "use", "travel", "sit", "shop", "go for", "go with", "cook", "listen to",
    "watch", "read", "ask for", "drive", "bike", "walk", "sleep", "work out", "train",
)  # fmt: skip

_RULE_SPECS: tuple[tuple[str, str, str, str, str, tuple[str, ...], float, float], ...] = (
    # key, type, regex, summary, kind, tags, importance, confidence
    ("name", _R, r"my\s+(?:full\s+|real\s+)?name(?:'s|\s+is)\s+(?P<value>.+)",
     "User's name is {value}", "name", ("profile", "name"), 0.8, 0.9),
    ("preferred_name", _R,
     r"(?:please\s+)?(?:just\s+)?(?:call\s+me|I\s+go\s+by|(?:everyone|people|my\s+friends)\s+calls?\s+me)\s+(?P<value>.+)",
     "User wants to be called {value}", "name", ("profile", "name"), 0.8, 0.9),
    ("pronouns", _R, r"my\s+pronouns\s+are\s+(?P<value>\w+\s*/\s*\w+(?:\s*/\s*\w+)?)",
     "User's pronouns are {value}", "free", ("profile",), 0.7, 0.9),
    ("age", _R, rf"{I_AM}\s+(?P<value>\d{{1,2}})(?:\s+(?:years?|yrs?)\s+old|\s*(?:yo|y/o))?$",
     "User is {value} years old", "free", ("profile", "age"), 0.6, 0.8),
    ("birthday", _R, r"my\s+(?:birthday|bday|b-day)(?:\s+is|'s)\s+(?:on\s+|in\s+)?(?P<value>.+)",
     "User's birthday is {value}", "free", ("profile", "birthday"), 0.7, 0.9),
    ("birthday", _R, r"I\s+was\s+born\s+on\s+(?P<value>.+)",
     "User was born on {value}", "free", ("profile", "birthday"), 0.7, 0.9),
    ("birth_year", _R, r"I\s+was\s+born\s+in\s+(?P<value>(?:19|20)\d\d)\b",
     "User was born in {value}", "free", ("profile", "age"), 0.6, 0.9),
    ("birthplace", _R, r"I\s+was\s+born\s+(?:and\s+raised\s+)?in\s+(?P<value>.+)",
     "User was born in {value}", "proper", ("profile", "location"), 0.6, 0.85),
    ("home", _R,
     r"(?:I|we|(?:me|I)\s+and\s+my\s+\w+|my\s+\w+\s+and\s+(?:I|me))(?:(?:'ve|\s+have)\s+(?:always\s+)?lived|\s+(?:currently\s+|now\s+|still\s+)?(?:live|reside))\s+(?P<where>in|near|outside(?:\s+of)?|just\s+outside(?:\s+of)?|close\s+to)\s+(?P<value>.+)",
     "User lives {where} {value}", "place", ("profile", "location"), 0.7, 0.85),
    ("nationality", _R, rf"{I_AM}\s+(?:(?:half|originally)\s+)?(?P<value>(?-i:{DEMONYMS}))(?=$|,|\s+(?:and|but|by|originally|so)\b)",
     "User is {value}", "free", ("profile", "nationality"), 0.6, 0.85),
    ("name", _R, r"{I_AM}\s+(?P<value>(?-i:[A-Z][a-z]+))(?=$|,)".replace("{I_AM}", I_AM),
     "User's name is {value}", "name", ("profile", "name"), 0.7, 0.75),
    ("home", _R, rf"{I_AM}\s+(?:currently\s+)?based\s+(?:in|out\s+of)\s+(?P<value>.+)",
     "User is based in {value}", "place", ("profile", "location"), 0.7, 0.85),
    ("home", _R, r"(?:I|we)\s+(?:just\s+|recently\s+)?moved\s+to\s+(?P<value>.+)",
     "User moved to {value}", "proper", ("profile", "location"), 0.7, 0.8),
    ("hometown", _R, rf"(?:{I_AM}\s+(?:originally\s+)?from|I\s+(?:originally\s+)?come\s+from|I\s+grew\s+up\s+in|my\s+home\s*town\s+is)\s+(?P<value>.+)",
     "User is from {value}", "place", ("profile", "location"), 0.6, 0.85),
    ("hometown", _R, r"(?:I|we)\s+(?:originally\s+)?moved\s+(?:here\s+)?from\s+(?P<value>.+)",
     "User moved from {value}", "proper", ("profile", "location"), 0.6, 0.8),
    ("timezone", _R, rf"(?:{I_AM}\s+(?:in|on)\s+|my\s+time\s*zone\s+is\s+)(?P<value>(?-i:[A-Z]{{2,5}})\b|[\w/+-]+\s+time(?:\s*zone)?)",
     "User's time zone is {value}", "free", ("profile", "time"), 0.6, 0.8),
    ("works_from_home", _R, r"I\s+(?:mostly\s+|usually\s+)?work\s+(?:from\s+home|remotely)(?P<value>)$",
     "User works from home", "none", ("profile", "work"), 0.5, 0.85),
    ("employer", _R, r"I\s+(?:currently\s+|still\s+)?work\s+(?:at|for)\s+(?P<value>.+)",
     "User works at {value}", "place", ("profile", "work"), 0.7, 0.85),
    ("employer", _R,
     r"I(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?:started|got|took|landed|accepted)\s+"
     r"(?:a\s+|an\s+|my\s+)?(?:new\s+)?(?:job|position|role)\s+(?:at|with)\s+(?P<value>.+)",
     "User works at {value}", "place", ("profile", "work"), 0.7, 0.85),
    ("occupation", _R, r"I\s+(?:currently\s+)?work\s+as\s+(?:a|an)\s+(?P<value>.+)",
     "User works as a {value}", "free", ("profile", "work"), 0.7, 0.85),
    ("occupation", _R, r"I\s+work\s+in\s+(?P<value>.+)",
     "User works in {value}", "place", ("profile", "work"), 0.6, 0.8),
    ("occupation", _R,
     rf"{I_AM}\s+(?:now\s+|currently\s+)?(?:a|an)\s+(?P<value>(?:[\w-]+\s+){{0,3}}?{OCCUPATIONS})s?\b(?:\s+(?:at|for|in|with)\s+(?P<employer>[^,;(]+?))?(?=$|[,;(]|\s+(?:and|so|but|because|since|who|which|now|too|\w+ing)\b)",
     "User is a {value}", "occupation", ("profile", "work"), 0.7, 0.85),
    ("occupation", _R, rf"{I_AM}\s+(?P<value>retired|self-employed|semi-retired|unemployed)\b",
     "User is {value}", "free", ("profile", "work"), 0.6, 0.85),
    ("occupation", _R, r"I\s+teach\s+(?P<value>.+)",
     "User teaches {value}", "thing", ("profile", "work"), 0.6, 0.8),
    ("occupation", _R, rf"I\s+(?:run|own|manage)\s+(?:a|an|my\s+own|the)\s+(?P<value>(?:[\w'&-]+\s+){{0,3}}?{BUSINESSES})\b",
     "User runs a {value}", "business", ("profile", "work"), 0.6, 0.8),
    ("education", _R,
     rf"(?:I\s+(?:currently\s+)?study|{I_AM}\s+(?:currently\s+)?studying|{I_AM}\s+majoring\s+in|I\s+majored\s+in|I\s+have\s+a\s+degree\s+in)\s+(?P<value>.+)",
     "User studies {value}", "study", ("profile", "education"), 0.6, 0.8),
    ("languages", _R,
     rf"(?:I\s+(?:also\s+)?speak|{I_AM}\s+fluent\s+in|my\s+(?:native|first|mother)\s+(?:language|tongue)\s+is|{I_AM}\s+a\s+native)\s+(?P<value>.+)",
     "User speaks {value}", "language", ("profile", "language"), 0.6, 0.85),
    ("family", _F,
     rf"(?:my|our)\s+(?:(?:little|big|older|younger|baby|twin|eldest|youngest|oldest)\s+)?(?P<rel>{RELATIVES})(?:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+is|,)?\s+(?P<value>.+)",
     "User's {rel} is named {value}", "name", ("fact", "family"), 0.7, 0.85),
    ("family", _F,
     rf"{I_HAVE}\s+(?P<value>{NUM}\s+(?:(?:little|young|grown|grown-up|adult|teenage|older|younger|twin|baby|step|beautiful|amazing|wonderful|lovely)\s+)?(?:kids?|children|child|toddlers?|newborn|teenagers?|teens?|sons?|daughters?|brothers?|sisters?|siblings?|grandchildren|grandkids?|twins|stepsons?|stepdaughters?|boys|girls))\b",
     "User has {value}", "free", ("fact", "family"), 0.7, 0.85),
    ("relationship", _F,
     rf"{I_AM}\s+(?:happily\s+)?(?P<value>married|divorced|single|engaged|widowed|a\s+widow(?:er)?|a\s+(?:single\s+|proud\s+)?(?:mom|mum|dad|mother|father|parent|grandma|grandpa|grandmother|grandfather)(?:\s+of\s+(?:two|three|four|five|\d|one))?)\b",
     "User is {value}", "free", ("fact", "family"), 0.7, 0.85),
    ("pet", _F,
     rf"(?:my|our)\s+(?:\w+\s+)?(?P<rel>{PETS})(?:'s\s+name\s+is|\s+is\s+(?:called|named)|,)?\s+(?P<value>.+)",
     "User has a {rel} named {value}", "name", ("fact", "pet"), 0.6, 0.85),
    ("pet", _F,
     rf"{I_HAVE}\s+(?:{NUM}\s+)(?:[\w-]+\s+)?(?P<rel>{PETS})s?\s+(?:named|called)\s+(?P<value>.+)",
     "User has a {rel} named {value}", "name", ("fact", "pet"), 0.6, 0.85),
    ("pet", _F,
     rf"{I_HAVE}\s+(?P<value>{NUM}\s+(?:[\w-]+\s+){{0,2}}?{PETS}s?)(?=$|[,;(]|\s+(?:and|named|called|who|that|so|but|at\s+home|too|as\s+well|now)\b)",
     "User has {value}", "free", ("fact", "pet"), 0.6, 0.85),
    ("allergy", _F,
     rf"(?:{I_AM}\s+(?:severely\s+|very\s+|mildly\s+|deathly\s+|super\s+|highly\s+)?allergic\s+to|I\s+have\s+(?:an\s+|severe\s+)?allerg(?:y|ies)\s+to)\s+(?P<value>.+)",
     "User is allergic to {value}", "thing", ("fact", "health", "allergy"), 0.95, 0.9),
    ("allergy", _F, r"I\s+have\s+(?:a|an)\s+(?:severe\s+|mild\s+)?(?P<value>[\w-]+(?:\s+[\w-]+)?)\s+allergy",
     "User has a {value} allergy", "thing", ("fact", "health", "allergy"), 0.95, 0.9),
    ("intolerance", _F,
     rf"{I_AM}\s+(?P<value>lactose|gluten|fructose|histamine|wheat|dairy)[\s-]+intolerant",
     "User is {value} intolerant", "free", ("fact", "health", "diet"), 0.9, 0.9),
    ("intolerance", _F, rf"{I_AM}\s+intolerant\s+to\s+(?P<value>.+)",
     "User is intolerant to {value}", "thing", ("fact", "health", "diet"), 0.9, 0.9),
    ("health", _F, rf"I\s+(?:have|get|suffer\s+from|live\s+with)\s+(?P<value>{CONDITIONS})\b",
     "User has {value}", "free", ("fact", "health"), 0.9, 0.85),
    ("health", _F, r"I\s+(?:use|need|rely\s+on)\s+(?P<value>a\s+wheelchair|a\s+cane|a\s+walker|crutches|hearing\s+aids|a\s+hearing\s+aid|a\s+CPAP(?:\s+machine)?|a\s+guide\s+dog|an\s+inhaler|insulin)\b",
     "User uses {value}", "free", ("fact", "health"), 0.85, 0.85),
    ("family", _F, r"we(?:'re|\s+are)\s+a\s+family\s+of\s+(?P<value>\w+)",
     "User's family has {value} members", "free", ("fact", "family"), 0.7, 0.85),
    ("health", _F, rf"{I_AM}\s+(?P<value>{HEALTH_STATES})\b",
     "User is {value}", "free", ("fact", "health"), 0.8, 0.85),
    ("diet_restriction", _F, r"I\s+(?:can't|cannot|can\s+not|shouldn't)\s+(?:eat|have|tolerate|digest)\s+(?P<value>.+)",
     "User can't eat {value}", "thing", ("fact", "health", "diet"), 0.85, 0.8),
    ("diet", _P,
     rf"(?:{I_AM}|we(?:'re|\s+are))\s+(?:a\s+|an\s+|strictly\s+|fully\s+|mostly\s+|mainly\s+)*(?P<value>{DIETS})\b",
     "User is {value}", "free", ("preference", "diet"), 0.85, 0.9),
    ("diet", _P, rf"as\s+(?:a|an)\s+(?:strict\s+|lifelong\s+)?(?P<value>{DIETS})\b",
     "User is {value}", "free", ("preference", "diet"), 0.85, 0.85),
    ("occupation", _R, rf"as\s+(?:a|an)\s+(?P<value>(?:[\w-]+\s+){{0,2}}?{OCCUPATIONS})\b",
     "User is a {value}", "occupation", ("profile", "work"), 0.7, 0.8),
    ("diet", _P, r"I\s+(?:keep|eat\s+only|only\s+eat|eat)\s+(?P<value>kosher|halal)\b",
     "User eats {value}", "free", ("preference", "diet"), 0.85, 0.9),
    ("diet", _P, rf"(?:{I_AM}\s+on|I\s+follow)\s+(?:a|the)\s+(?P<value>[\w-]+(?:\s+[\w-]+)?)\s+diet\b",
     "User follows a {value} diet", "thing", ("preference", "diet"), 0.8, 0.85),
    ("diet", _P, r"I\s+(?:don't|do\s+not|never)\s+(?P<verb>eat|drink)\s+(?P<value>.+)",
     "User doesn't {verb} {value}", "thing", ("preference", "diet"), 0.8, 0.85),
    ("diet", _P, r"I\s+(?:don't|do\s+not)\s+drink(?P<value>)$",
     "User doesn't drink alcohol", "none", ("preference", "diet"), 0.7, 0.8),
    ("possession", _F, r"(?:I|we)\s+(?:own|drive|ride)\s+(?P<value>(?:a|an|two|three|\d)\s+.+)",
     "User owns {value}", "owned", ("fact", "possession"), 0.5, 0.8),
    ("possession", _F, rf"{I_HAVE}\s+(?P<value>(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?{POSSESSIONS})\b",
     "User has {value}", "free", ("fact", "possession"), 0.5, 0.8),
    ("budget", _F, r"my\s+budget\s+(?:is|of|would\s+be)\s+(?P<value>.+)",
     "User's budget is {value}", "free", ("fact", "budget"), 0.7, 0.85),
    ("response_style", _P,
     r"please\s+(?:always\s+)?(?:keep\s+(?:it|answers|your\s+answers|replies|things)|be)\s+(?P<value>short|brief|concise|succinct|detailed|formal|casual|funny|humorous)\b",
     "User wants answers {value}", "free", ("preference", "style"), 0.8, 0.9),
    ("favourite", _P,
     r"my\s+(?:all-time\s+|absolute\s+|very\s+)?(?:favou?rite|fave|fav|go-to)\s+(?P<what>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+(?:is|are|has\s+to\s+be|would\s+be|=|:)\s+(?:definitely\s+|probably\s+)?(?P<value>.+)",
     "User's favourite {what} is {value}", "thing", ("preference", "favourite"), 0.7, 0.85),
    ("favourite", _P,
     r"(?P<value>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+|still\s+)?my\s+(?:all-time\s+|absolute\s+)?(?:favou?rite|fave|fav)\s+(?P<what>[\w'-]+(?:\s+[\w'-]+){0,4})",
     "User's favourite {what} is {value}", "thing", ("preference", "favourite"), 0.7, 0.85),
    ("favourite", _P,
     r"(?P<value>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+(?:is|are)\s+(?:totally\s+|definitely\s+)?(?P<what>my\s+(?:jam|thing|go-to|guilty\s+pleasure|comfort\s+food))$",
     "User's favourite {what} is {value}", "thing", ("preference", "favourite"), 0.7, 0.85),
    ("prefers", _P, rf"I(?:'d|\s+would)?\s+{ADV}prefer\s+(?P<value>.+)",
     "User prefers {value}", "thing", ("preference",), 0.7, 0.8),
    ("prefers", _P, rf"{I_AM}\s+(?:a|an)\s+(?:real\s+|total\s+|big\s+)?(?P<value>morning\s+person|night\s+person|night\s+owl|early\s+(?:bird|riser)|cat\s+person|dog\s+person|homebody|introvert|extrovert)\b",
     "User is a {value}", "free", ("preference",), 0.6, 0.8),
    ("prefers", _P, r"I(?:'d|\s+would)\s+(?:much\s+)?rather\s+(?P<value>.+)",
     "User would rather {value}", "rather", ("preference",), 0.65, 0.75),
    ("prefers", _P, rf"{I_AM}\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|longtime\s+|long-time\s+|lifelong\s+|die-?hard\s+)?fan\s+of\s+(?P<value>.+)",
     "User is a fan of {value}", "thing", ("preference",), 0.6, 0.8),
    ("dislikes", _P, rf"{I_AM}\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(?P<value>.+)",
     "User is not a fan of {value}", "thing", ("preference", "dislike"), 0.6, 0.8),
    ("dislikes", _P, rf"{I_AM}\s+not\s+(?:really\s+)?into\s+(?P<value>.+)",
     "User is not into {value}", "thing", ("preference", "dislike"), 0.6, 0.8),
    ("likes", _P, rf"{I_AM}\s+(?:really\s+|so\s+|very\s+|super\s+|totally\s+)?(?:into|passionate\s+about|obsessed\s+with|crazy\s+about|mad\s+about|a\s+sucker\s+for)\s+(?P<value>.+)",
     "User is into {value}", "thing", ("preference",), 0.6, 0.8),
    ("likes", _P, rf"I\s+{ADV}(?P<verb>love|like|enjoy|adore)\s+(?P<value>.+)",
     "User {verb_s} {value}", "thing", ("preference",), 0.6, 0.75),
    ("dislikes", _P, rf"I\s+{ADV}(?P<verb>hate|dislike|detest|loathe|can't\s+stand|cannot\s+stand)\s+(?P<value>.+)",
     "User {verb_s} {value}", "thing", ("preference", "dislike"), 0.6, 0.8),
    ("dislikes", _P, r"I\s+(?:really\s+)?(?:don't|do\s+not)\s+(?:really\s+)?(?:like|enjoy)\s+(?P<value>.+)",
     "User doesn't like {value}", "thing", ("preference", "dislike"), 0.6, 0.75),
    ("habit", _P,
     rf"I\s+(?P<how>always|usually|normally|typically|generally|mostly)\s+(?P<verb>{HABIT_VERBS})\s+(?P<value>.+)",
     "User {how} {verb_s} {value}", "habit", ("preference", "habit"), 0.6, 0.75),
    ("hobby", _P, rf"I\s+(?:also\s+)?play\s+(?P<value>(?:the\s+)?{HOBBIES_PLAYED})\b",
     "User plays {value}", "free", ("preference", "hobby"), 0.6, 0.85),
    ("hobby", _P, rf"(?:I|we)\s+(?:often\s+|regularly\s+|also\s+)?go\s+(?P<value>{OUTINGS})\b",
     "User goes {value}", "free", ("preference", "hobby"), 0.6, 0.8),
    ("hobby", _P, r"my\s+(?:main\s+|favou?rite\s+)?hobb(?:y|ies)\s+(?:is|are|include)\s+(?P<value>.+)",
     "User's hobbies: {value}", "thing", ("preference", "hobby"), 0.6, 0.85),
)  # fmt: skip

RULES: tuple[Rule, ...] = tuple(
    Rule(key, kind_type, re.compile(regex, re.IGNORECASE), summary, kind, tags, imp, conf)
    for key, kind_type, regex, summary, kind, tags, imp, conf in _RULE_SPECS
)

# What a chat line may say before its subject without changing what the clause states.
LEAD_IN = re.compile(
    r"^(?:(?:oh|ah|well|yeah|yep|yes|no|so|and|but|also|actually|honestly|btw|by\s+the\s+way|"
    r"fyi|just\s+so\s+you\s+know|for\s+the\s+record|for\s+what\s+it's\s+worth|fwiw|personally|"
    r"as\s+for\s+me|anyway|anyways|ok|okay|alright|um+|uh+|hmm+|lol|haha+|tbh|"
    r"to\s+be\s+honest|in\s+fact|plus|now|these\s+days|nowadays|currently|at\s+the\s+moment|"
    r"in\s+general|generally|basically|funnily\s+enough|"
    r"(?:hi|hey|hello|hiya|thanks|thank\s+you)(?:\s+(?-i:[A-Z][a-z]+))?|"
    r"not\s+sure\s+if\s+I\s+(?:ever\s+)?(?:mentioned|told\s+you)(?:\s+this|\s+it)?(?:\s+but)?|"
    r"as\s+I\s+(?:said|mentioned)|like\s+I\s+said|I\s+should\s+(?:mention|say)(?:\s+that)?|"
    r"(?:fun|random)\s+fact(?:\s+about\s+me)?|quick\s+note|(?:just\s+)?(?:a\s+)?heads\s+up(?:\s+that)?|originally)"
    r"\b[\s,!.:;-]*)*",
    re.IGNORECASE,
)
# A sentence that opens on one of these states a condition, a wish or a question.
HYPOTHETICAL_START = re.compile(
    r"^\W*(?:if|when|whenever|unless|once|suppose|supposing|imagine|assuming|in\s+case|"
    r"what\s+if|say|maybe|perhaps|hopefully|someday|one\s+day|i\s+wish|i\s+hope|"
    r"i\s+think|i\s+guess|i\s+suppose|i\s+feel\s+like|i\s+was\s+wondering|i\s+wonder|"
    r"do|does|did|would|could|should|can|will|is|are|was|were|what|why|how|where|who|which)\b",
    re.IGNORECASE,
)
