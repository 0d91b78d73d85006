"""The English of what passes: a time that is over or of one occasion, trouble, the moment.

``router.sessions.extraction`` keeps no memory of a sentence these say passes (unless a
standing marker of ``router.sessions.phrases`` says it lasts); each pattern's comment says what
it catches and why, with an example.
"""

from __future__ import annotations

import re

from router.sessions.expiry import MONTH_NAMES
from router.sessions.phrases import FLAGS

# A time that comes round makes a date lasting ("paid on the 15th of each month", "paid monthly on the 25th",
# not "our yearly trip"), though not a request or trouble ("a cleaner every week", "crashes every day") ...
RECURRING = re.compile(
    r"\b(?:(?:every|each) (?:day|night|morning|evening|week|weekend|month|quarter|year|summer|winter)|"
    r"(?:monthly|weekly|fortnightly|yearly|annually)(?=\s*(?:$|[.,;!?]|(?:on|at|in|from|and|but|by)\b)))\b",
    FLAGS,
)
# ... unless the sentence speaks of a time near now ("I'm on call next week, we rotate every month").
NEAR = re.compile(r"\b(?:today|tonight|tomorrow|yesterday|this|next|right now|at the moment)\b", FLAGS)
# The date of a yearly event is a fact ("our anniversary is June 12", "I was born in 1990").
YEARLY = re.compile(r"\b(?:birthdays?|anniversar(?:y|ies)|born (?:on|in)|turns \d+)\b", FLAGS)
# A month by its name: "the 3rd of May", not "12 of us".
MONTHS = rf"(?:{MONTH_NAMES})\b"
# A year, where a time word or a month introduces it ("in 2019", "March 2020"): a
# number alone is an amount, an address or a model ("2000 euros", "2020 Main Street", "a 2018 Golf").
YEAR = (
    r"(?:(?:in|since|from|until|till|through|during|before|after|around|of|by|for|the)\s+(?:(?:early|late|mid)[\s-]+)?|"
    rf"{MONTHS}\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?)(?:19|20)\d\d"
)
# A sentence that opens on one occasion keeps nothing, even in a clause: "Just for this trip, I'm vegetarian."
SCOPED = re.compile(r"^(?:just |only )?for (?:this|now|today|tonight)\b", FLAGS)
# A fact about today only: not durable unless a standing marker says so.
ONE_OFF = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening|week|weekend|month|time)|"
    # one occasion ("my budget for this dinner"), a moment just past or to come ("an hour ago", "I'm meeting Sarah
    # for coffee later", not "I prefer to eat dinner later")
    r"(?:for|on|at|during|with) this (?:breakfast|lunch|dinner|meal|trip|order|booking|party|event)\b(?! \w+ing\b)|"
    r"just for (?:this|now|today)|"
    r"(?:minutes?|hours?|an hour) ago|(?:am|are) \w+ing\b.*\blater$|"
    # an event's year ("PyCon 2025", "my 2023 tax return"), not a model's ("a 2018 Golf")
    r"(?-i:[A-Z][\w-]*) (?:19|20)\d\d|(?:my|our) (?:19|20)\d\d|"
    r"next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)|"
    r"next (?:semester|season|spring|summer|fall|autumn|winter|trip)|for the first time|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}\b|"
    rf"on the \d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)? of {MONTHS}|{YEAR}|lately|"
    r"right now|at the moment|coming up|upcoming|in \d+ (?:minutes|hours|days)|soon)\b",
    FLAGS,
)
# Trouble asks for help and passes: "my flight was cancelled", "our payments service is down", "I can't log in".
# Where a word that may name a state does: at its phrase's end, before a conjunction, a time, an adverb, or
# "in"/"on" and a lower-case word ("down in eu-west-1", not "down south"; "a cold today", not "a cold storage unit").
PHRASE_END = (
    r"(?-i:(?=\s*(?:$|[.,;!?:])|\s+(?:(?:and|but|so|again|since|for|today|tonight|this|right now|at the moment|"
    r"\w+ly)\b|(?:in|on)\s+[a-z0-9])))"
)
# A capitalised word is a name ("my favourite show is Lost"), and a frequency says it lasts ("constantly late").
TROUBLE = re.compile(
    r"\b(?:am|is|are|was|were|got|gets|has been|have been|keeps?|kept|arrived|came)\s+"
    r"(?:(?:(?!(?:constantly|regularly|frequently|repeatedly|routinely)\b)\w+ly|just|still|not|now|again|already|"
    r"being|getting)\s+)?(?-i:(?:cancell?ed|delayed|declined|rejected|refused|denied|overcharged|charged twice|"
    r"double charged|lost|stolen|damaged|broken|cracked|hacked|compromised|suspended|blocked|locked out|frozen|"
    r"stuck(?! with)|missing|offline|unavailable|failed|failing|crashing|dropping|jammed|leaking|flat|"
    r"stopped working|not working|overdue)\b|(?:locked|(?:running )?late|down)" + PHRASE_END + r")"
    r"|\b(?:has|have|did|does|will|would) not (?:arrive|arrived|come|work|worked|load|start|turn on|respond|ship|"
    r"shipped)\b"
    # "My headphones do not work" is trouble; "I (really) do not work on Fridays" and "Mornings do not work
    # for me" are the user's week.
    r"|\b(?!(?:i|we|still|also|just|\w+ly|mornings|afternoons|evenings|nights|weekends|weekdays|mondays|tuesdays|"
    r"wednesdays|thursdays|fridays|saturdays|sundays)\b)[\w-]+\s+(?:(?:\w+ly|still|also|just)\s+)?do not "
    r"(?:arrive|come|work|load|start|turn on|respond|ship)\b"
    r"|\bnever (?:received|arrived|came|got)\b"
    r"|\b(?:can not|could not|am unable to|are unable to) (?:log|sign|access|connect|open|load|reach|pay|download|"
    r"upload|print|install|reset|find|get in)\b"
    r"|\b(?:i|we)\s+(?:just\s+)?(?:lost(?! my (?:sense|hearing|sight|voice|job|father|mother|dad|mum|mom|husband|"
    r"wife|partner|son|daughter|brother|sister))|missed|broke|dropped|ran out)\b|\b(?:crashes|crashed|froze|freezes)\b"
    r"|\b(?:get|gets|got|getting|see|seeing|saw|hit|hitting|keep getting)\s+(?:an?|the|this|that|some)\s+"
    r"(?:[\w-]+\s+){0,3}error\b|\b(?:having|have|had|is|was)\s+an?\s+(?:\w+\s+)?outage\b"
    r"|\b(?:am|are|is|feeling)\s+(?:not\s+|so\s+|really\s+|very\s+)?(?:hungry|thirsty|tired(?! of)|sleepy|"
    r"exhausted|starving|bored(?! of| with)|running late|sick(?! of)|ill|unwell|dizzy|annoyed|frustrated|upset|angry|"
    r"furious|stressed|fed up|dying|running out of|out of(?! (?:the )?(?:office|town|country)\b))\b"
    r"|\b(?:i|we)\s+(?:am\s+)?(?:have|having)\s+"
    r"(?:an?\s+(?:headache|fever|flu|migraine|toothache|stomach ache)\b|a\s+cold" + PHRASE_END + r")"
    # Where the user is or what they are doing now: "I'm in a meeting", "I'm driving"; not a habit ("busy on
    # Mondays", "on the road most weeks") nor a way to become something.
    r"|\b(?:am|are)\s+(?!.*\b(?:every|each|most|usually|often|always|normally|typically|all day|weekends?|"
    r"mornings|afternoons|evenings|nights|on \w+days)\b)(?:(?:just|still|now|currently)\s+)?(?:busy|driving|"
    r"commuting|boarding|waiting for (?:the|a|an|my|our) (?:bus|train|tram|taxi|cab|uber|flight|plane|ride|lift|"
    r"delivery|package|table|reply|call)|in a (?:rush|hurry)|in (?:a|the|another) meeting|in meetings|"
    r"on (?:a|the|another) (?:call|phone)|"
    r"on (?:my|our) way(?! to becom)|on the (?:train|bus|plane|road|tube|subway|metro|ferry)|at the (?:airport|gate)|"
    r"away from (?:my|the|our) (?:desk|keyboard|computer))\b",
    FLAGS,
)
