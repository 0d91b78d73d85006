"""The English the memory rules read: sentence ends, requests and questions, trouble, secrets.

``router.sessions.extraction`` decides with them what a sentence says about the user; each
pattern's comment says what it catches and why, with an example.
"""

from __future__ import annotations

import re

from router.common.english import ABBREVIATIONS, ACTION_VERBS

END = ABBREVIATIONS + r"(?<=[.!?;])\s+|\n+"
# Memories also split at ": Capital"; the recent context keeps each separator, to give its text back as written.
SENTENCE = re.compile(END + r"|(?<=\w)\s*[:]\s+(?=[A-Z])")
SENTENCES = re.compile(f"({END})")
# An action verb where a clause starts asks for something ("..., find me a restaurant"); elsewhere
# it may be a habit or a noun ("I always book aisle seats", "my order").
ACTION = re.compile(rf"(?:^|[,;:]\s*|\b(?:and|so|then|but|please)\s+)(?:please\s+)?(?:{ACTION_VERBS})\b", re.IGNORECASE)
FLAGS = re.IGNORECASE
# "Please remember that ...", "FYI, ...": what follows is meant to be kept.
KEEP_PREFIX = re.compile(
    r"^(?:(?:please|also|and|btw|by the way|oh)[\s,]+)*"
    r"(?:(?:remember|note|keep in mind|don't forget|do not forget|never forget|make a note|take note)"
    r"(?:\s+(?:this|that|for later|for the future))?(?:\s*(?:that|:|,))?|fyi|for the record|just so you know|"
    r"for (?:your )?(?:context|reference|information))[\s,:]+",
    FLAGS,
)
SELF = re.compile(r"\b(?:i|me|my|mine|myself|we|our|ours|us)\b", FLAGS)
QUESTION = re.compile(
    r"^(?:what|whats|how|where|which|who|whom|whose|when(?![^,?]*,\s*(?:please\s+)?(?:always|never)\b)|why|"
    r"is there|are there|is it|"
    r"do you|does|did you|can i|could i|should i|shall|may i|am i|do i|will i)\b",
    FLAGS,
)
# A sentence opening on a verb addressed to the assistant is a request ...
IMPERATIVE = re.compile(
    r"^(?:(?:please|kindly|now|ok|okay|then|also|and|so|hey|hi|hello)[\s,]+)*"
    rf"(?:can|could|would|will|please|pls|{ACTION_VERBS}|do|don't|is|are|i would like you|i want you|i need you)\b",
    FLAGS,
)
# ... and so is "I would like ...", "I am looking for ...", "could you", "I need ...".
ASKING = re.compile(
    # "I also need ...", "we really want ...", "I would also like ...": an adverb does not make a request a fact.
    r"\b(?:i|we)\s+(?:(?:also|really|just|still|additionally|further|now|then|actually|urgently)\s+)?"
    r"(?:would (?:also |really )?(?:like|love)|want|wanna|need|am keen to|are keen to|"
    r"am eager to|are eager to|am ready to|are ready to|am looking|are looking|am trying|are trying|"
    r"am planning|are planning|plan to|am going to|are going to|will(?! not| never| only)|wonder|"
    r"was wondering|am wondering|am curious|am interested in knowing|hope you|am hoping|"
    r"would appreciate|am searching|am thinking|am considering|am about to|just got|just bought|"
    r"have a question|have some questions|have a few questions|am in need|are in need|am in the market|"
    r"are in the market|am interested in (?:starting|exploring|trying|learning|getting|finding|buying|visiting)|"
    r"am visiting|are visiting|am going on|are going on|am heading|are heading|am traveling to|"
    r"are traveling to|am travelling to|are travelling to|am flying to|are flying to|have been looking|"
    r"would prefer|am in the mood|are in the mood|feel like|fancy|am craving|are craving|could use|"
    r"am interested in \w+ing|are interested in \w+ing|am open to|are open to|am not picky|am not \w* ?concerned|"
    r"do not care|am (?:now|currently|still) in|are (?:now|currently|still) in|am starting from|"
    r"am having trouble|am having issues|am having problems|am needing|noticed|heard|hear|was told|"
    r"have been told|forgot|received|recently received|ordered|purchased|bought|"
    r"just(?!\s+(?:joined|moved|relocated|started|switched|became)\b)|had|made a|"
    r"have (?:a|an|the|some) (?:\w+ )?(?:query|question|request|task|problem|issue|error|experiment|urgency|"
    r"leisure|day off|meeting|appointment)|have completed|have planned|am done|am finished|believe (?!in\b)|"
    r"am interested in|are interested in|am (?:\w+ )?in (?:\w+ )?need|am after|am getting (?:a|an|the)|"
    r"am (?:not )?(?:travel+ing|coming|driving|leaving|departing) (?:from|to)|am at(?! (?:a|an|the) \w+ until)|wish)\b"
    r"|\b(?:and|but|so)\s+(?:want|need|would like|am looking|looking)\b|\blooking (?:for|to)\b"
    r"|\b(?:can|could|would|will)\s+you\b|\byou\s+(?:can|could|should|would|must|need to)\b|\blet me know\b"
    r"|\bhelp me\b",
    FLAGS,
)
# A standing instruction or a habit holds beyond this turn, whatever its form.
STANDING = re.compile(
    r"\b(?:always|never(?! (?:received|arrived|came|got|mind)\b)|usually|generally|normally|typically|from now on|"
    r"going forward|in the future|"
    r"by default|whenever|every time|each time|at all times|as a rule|in general|any time|anytime|"
    r"ever)\b",
    FLAGS,
)
# "Always use metric units", "from now on, answer in French": a standing instruction.
# "Don't book me on red-eyes" forbids, for good, a kind of thing done to the user; "don't send it yet", "do
# not cancel the 9am meeting", "don't book anything until I confirm", "don't call me, I'm in a meeting" speak
# of a thing, a time or a state at hand, and "Don't return full text" names no "me" or "us": it is about the
# request's answer (contractions are expanded first: "dont" reads "do not").
INSTRUCTION = re.compile(
    r"^(?:please[\s,]+)?(?:always|never(?! mind\b)|from now on|going forward|in the future|by default|whenever|"
    r"every time|each time|at all times|as a rule)\b|^(?:please[\s,]+)?call me\b|^you can call me\s+(?-i:[A-Z])"
    r"|^(?:please[\s,]+)?(?:use|prefer|give me|show me|write|answer in)\b[^,]+,\s*(?:not|never)\b"
    # "When you give me code, always include comments"; "Sundays are for church, so never schedule anything then"
    # (not of one task: "When you write the email to John, always cc me", "This report is for the board, so ...")
    r"|^(?!.*\b(?:it|this|that|these|those|the|today|tonight|tomorrow|next|now)\b)"
    rf"(?:when\b[^,?]*,\s*(?:please\s+)?(?:always|never(?! mind))\b|.*\bso,?\s+(?:please\s+)?(?:always|never)\s+"
    rf"(?:{ACTION_VERBS})\b)"
    rf"|^(?:please[\s,]+)?do not\s+(?:{ACTION_VERBS})\b(?=.*\b(?:me|us)\b)"
    r"(?!.*\b(?:it|that|this|these|those|the|my|yet|now|today|tonight|tomorrow|next|until|till|i am|we are|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)",
    FLAGS,
)
ORDER = re.compile(
    r"\b(?:always|from now on|going forward|in the future|by default|every time|each time|at all times|ever)\b",
    FLAGS,
)
# A need of the body lasts, though "I need" asks: "I need wheelchair access", "we need step-free access".
NEEDS = re.compile(
    r"\b(?:i|we)\s+(?:(?:really|also|always|still)\s+)?need\s+"
    r"(?:(?:wheelchair|step-free|step free|level|barrier-free)\s+(?:access|assistance)|a wheelchair|a hearing loop|"
    r"a sign language interpreter)(?=\s*(?:[.;!]|$))",  # the need ends the sentence: no request follows it
    FLAGS,
)
# A reason makes a need lasting: "due to my allergies, I need ...".
REASON = re.compile(r"\b(?:due to|because|since i|since we|as i|as we|so i|so we|given my|given our)\b", FLAGS)
# A clause of refusal or preference keeps a sentence that also asks ("..., but I despise hybrids").
FIRM = re.compile(
    r"\b(?:but|and|although|though|because|as|since)\s+(?:i|we)\s+(?:\w+ly\s+)?(?:despise|hate|avoid|dislike|"
    r"am allergic|are allergic|can not|do not|prefer|refuse|never|always|only)\b",
    FLAGS,
)
# A sentence that is no memory as a whole may join one to another clause: "Book me a table for two,
# I am vegetarian.", "I'm not hungry, I'm vegetarian." A clause starts at a comma, a semicolon, a
# dash, "and", "but", "so" or "because" before the user's "I", "we", "my" or "our", unless the
# sentence opens on a condition or a time ("If I have $100, I ...", "When I travel, I ...").
CLAUSE = re.compile(
    r"\s*(?:[,;]|\s[-\u2013\u2014]|[\u2013\u2014])\s*(?:(?:and|but|so|because|since|as)\s+)?(?=(?:i|i'm|im|we|we're|my|our)\b)"
    r"|\s+(?:and|but|so|because)\s+(?=(?:i|i'm|im|we|we're|my|our)\b)"
    # "Find me a flight to Rome, and don't book me on red-eyes": a standing instruction after the request
    r"|\s*[,;]\s*(?:(?:and|but)\s+)?(?=(?:don't|dont|do not)\b)"
    # "I'm vegetarian, any good places near the office?": a question after the statement
    r"|\s*,\s*(?:so\s+)?(?=(?:what|which|where|how|who|when|any|anything|can|could|would|will|do|does|is|are|should)"
    r"\b[^,]*\?$)",
    FLAGS,
)
SUBORDINATE = re.compile(
    r"^(?:if|suppose|supposing|assuming|when|whenever|while|although|though|unless|once|after|before|since|"
    r"because|as|even if|even though|hypothetically|pretend|imagine|let us say)\b",
    FLAGS,
)
# ... though a reason before a question gives its context: "Since I'm allergic to cats, what dog breeds ...?"
REASON_FIRST = re.compile(r"^(?:since|because)\b(?=[^,]*,[^?]*\?$)", FLAGS)
# Such a clause is kept when it says what the user prefers, avoids or always does, or fills a slot
# (home, employer, diet, seat, budget, "my X is Y"): "I have an audio file, and I'd like ..." only
# sets up its request. Any clause a memory: BFCL's questions leaving one 3.8% -> 5.8%; these: 4.5%.
PREFERS = re.compile(
    r"\b(?:i|we)\s+(?:(?:\w+ly|also|still|do not)\s+)?(?:prefer|like|love|enjoy|hate|dislike|despise|avoid|"
    r"refuse|never|always|do not (?:drive|smoke|drink|eat)|(?:am|are) (?:\w+ )?(?:allergic|intolerant)|"
    r"can not (?:eat|drink|stand)|"
    # what a person needs from every service, said beside a request: "..., I use a wheelchair"
    r"(?:am|are) (?:a )?(?:celiac|coeliac|diabetic|pregnant|deaf|blind|wheelchair user|in recovery)|"
    rf"use (?:a )?(?:wheelchair|cane|walker|mobility scooter|hearing aids?|guide dog))\b|{NEEDS.pattern}",
    FLAGS,
)
# Words that open what is said without adding to it: "Btw I live in Porto" keeps "I live in Porto".
FILLER = re.compile(r"^(?:(?:btw|by the way|fyi|actually|oh|well|ok|okay|so|also|and|correction)\b[\s,:;!-]*)+", FLAGS)
# How a sentence asking to forget opens: "Forget ...", "Actually, forget ...", "Can you forget ...".
FORGET = (
    r"^(?:(?:actually|oh|and|also|ok|okay|so|well|hey|hmm|please|can you|could you|would you|will you)[\s,]+)*"
    r"(?:forget|disregard|stop remembering|unlearn)\b"
)
# Secrets are never kept, whoever asks; conditions, pasted data and what to forget are not facts about the user.
NEVER = re.compile(
    r"\b(?:passwords?|passcodes?|passphrases?|pin(?: code)?|api keys?|tokens?|secrets?|credentials|"
    r"credit cards?|card numbers?|cvv|cvc|iban|social security|ssn|logins?|connection strings?|private keys?|"
    r"access (?:keys?|ids?)|(?:2fa|mfa|otp|one-time|verification|security|access|door|gate|alarm|safe|entry) codes?|"
    r"recovery (?:codes?|phrases?)|seed phrases?|pw|pwd|passwd|maiden names?|security (?:questions?|answers?)|"
    r"(?:lock|locker|safe|padlock) combinations?|passport (?:numbers?|no|ids?)|"
    r"(?:(?:driver'?s?|driving) )?licen[cs]e (?:numbers?|no)|national (?:id|insurance)|(?:ni|sin) numbers?|"
    r"social insurance numbers?|tax (?:ids?|numbers?)|bank accounts?|(?:account|acct) (?:numbers?|no)|"
    r"routing numbers?|sort codes?)\b"
    # any key's value ("my openai key is ..."), a URL holding a user and password, an AWS access key id
    r"|\bkeys?\s+(?:is|are)\b|\bkeys?\s*[:=]|\w+://[^\s/:@]+:[^\s@]+@|\bAKIA[0-9A-Z]{16}\b"
    # values shaped as secrets, whatever names them: a card number (13 to 19 digits, grouped or not),
    # a token (a run of 16 letters and digits or more, both in it: "sk-proj-...", "ghp_..."; an
    # identifier's words, "prod-eu-central-1-payments", are shorter runs)
    r"|\b\d(?:[ -]?\d){12,18}\b|(?<![A-Za-z0-9])(?=[A-Za-z0-9]{16})(?=[A-Za-z]*\d)(?=\d*[A-Za-z])"
    r"|^(?:if|suppose|supposing|assuming|assume|imagine|pretend|hypothetically|let us say|say|here is|here are|given)\b"
    # "Forget that I live in Porto" asks for the opposite of keeping it.
    rf"|{FORGET}",
    FLAGS,
)
# Data handed over for one computation ("I have a list [1, 2, 3]") is not about the user.
DATA = re.compile(r"[\[\]{}=<>`|\\]|\b\d+(?:\.\d+)?\s*[-+*/^]\s*\d|(?:\d[\d.,]*\D+){4,}\d")
_SUBSTANCES = (
    r"dairy|gluten|lactose|spicy(?: food)?|caffeine|coffee|alcohol|meat|red meat|pork|beef|fish|seafood|shellfish|"
    r"nuts|peanuts|eggs|sugar|carbs|onions|garlic"
)
_IRRITANTS = r"cats|dogs|pollen|dust|perfume|smoke|red wine|wine|beer|milk|cheese|chocolate|wheat|soy|flying|boats"
# A statement about the user: "I <verb>" (after requests are ruled out), "my X is ...", "X is my Y".
STATEMENT = re.compile(
    r"\b(?:i|we)\s+(?:\w+ly\s+){0,2}(?!\w+ly\b)\w+"
    # "My partner, Alex, is vegan": a name between commas
    r"|\b(?:my|our)\s+[\w-]+(?:\s+[\w-]+){0,5}(?:,\s*[\w-]+(?:\s+[\w-]+){0,2},(?:\s+\w+ly|\s+never)?)?\s+"
    r"(?:is|are|was|were|has|have|had|\w+s|can not|cannot|does not|do not)\b"
    r"|\b(?:is|are)\s+(?:my|our|mine|ours)\b|\b(?:is|are) not (?:really )?(?:my|our) (?:thing|cup of tea|style)\b"
    r"|\b(?:is|are)\s+(?:not\s+)?(?:[\w-]+\s+){0,3}(?:for|to)\s+(?:me|us)\b"
    # "My kids go to Lincoln Elementary": the verb of the user's people has no -s
    r"|\b(?:my|our)\s+(?:[\w-]+\s+){0,2}(?:kids|children|sons|daughters|twins|parents|grandparents|grandchildren|"
    r"grandkids|siblings|brothers|sisters|in-laws|folks|dogs|cats)\s+(?:(?:\w+ly|all|both)\s+)?(?:go|live|work|attend|"
    r"study|play|eat|like|love|hate|prefer|speak)\b"
    r"|\bcall me\b|^(?:as|being|having)\s+(?:a|an|someone|somebody)\b"
    # "Mornings do not work for me" (trouble rules out "These links do not work for me"); "Dairy makes me sick",
    # a reaction of the body, but not "That smell makes me sick", one of now
    rf"|\bdo not work for (?:me|us)\b|^(?:{_SUBSTANCES}|{_IRRITANTS})\s+(?:makes? (?:me|us) "
    r"(?:(?:super|really|very|so|quite) )?(?:sick|ill|"
    r"nauseous|bloated|dizzy|sneeze|itch|itchy|break out)|gives? (?:me|us) (?:headaches|migraines|hives|a rash|"
    r"heartburn))\b",
    FLAGS,
)
# Role play says nothing about the user: a sentence that opens one ("For this story, I'm a detective"), and
# what follows its colon on the line ("Let's role-play: I'm a customer complaining about a late delivery.").
FICTION = re.compile(
    r"^(?:let'?s |let us )(?:do (?:a |some )?)?(?:role-?play|roleplay)\b|^(?:role-?play|roleplay)\s*(?::|with me|as)"
    r"|^(?:for|in) this (?:story|game|role-?play|scenario|exercise)\b",
    FLAGS,
)
FICTION_LINE = re.compile(
    r"^[ \t]*(?:let'?s |let us )?(?:do (?:a |some )?)?(?:role-?play|roleplay)\b[^\n]*?:[^\n]*", re.M | FLAGS
)
# Chat drops the subject, and these read it with "I": each a closed list, since the same words open orders,
# replies and advice ("vegan, large, oat milk", "same here", "can't do the 3pm", "don't eat the leftovers").
_WHO = (
    r"vegan|vegetarian|pescatarian|coeliac|celiac|diabetic|teacher|nurse|doctor|developer|dev|engineer|designer|"
    r"student|parent|mum|mom|dad|beginner|newbie|retiree|freelancer|lefty"
)
_STATE = (
    r"married|divorced|widowed|retired|pregnant|deaf|blind|left-handed|dyslexic|autistic|sober|teetotal|"
    r"lactose intolerant|low vision|hard of hearing|colou?r-?blind|(?:grad |phd |college |uni |university )?student|"
    r"on (?:[\w-]+ )?(?:metformin|insulin|medication|meds|blood thinners?|antidepressants|a [\w-]+ diet)"
    r"(?: daily| long-term)?"
)
# ... each standing alone where it is said: "student and broke", not "student ticket", nor "vegetarian, please"
_ALONE = r"(?=\s*(?:$|[,.;!]|(?:and|so|but|btw|fyi|tbh|too|lol)\b))(?!\s*,?\s*(?:please|pls|thanks)\b)"
SUBJECTLESS = (
    # "not a fan of horror films", not of a draft or a choice ("not a fan of the ending", "of option B")
    (
        re.compile(
            r"^(?=(?:not (?:a|much of a)|an?(?: big| huge)?|big|huge) fan of "
            r"(?!(?:this|that|your|it|the|these|those|option|one)\b))",
            FLAGS,
        ),
        "I am ",
    ),
    # "vegan here", "retired teacher here, lots of free time": who is speaking (not "same here", "logs here")
    (re.compile(rf"^(?=(?:[\w-]+\s+)?(?:{_WHO})\s+here\b)", FLAGS), "I am "),
    # "married, two kids", "grad student and broke", "low vision so big fonts help"
    (re.compile(rf"^(?=(?:{_STATE}){_ALONE})", FLAGS), "I am "),
    # "have adhd so short steps help", "dont own a car", "work from home mostly": the user's life, not a moment
    # ("got kids in the car"), advice ("don't drive, take the train") nor a release ("live in prod")
    (
        re.compile(
            r"^(?=(?:(?:have|got|have got) (?!(?:the|your|his|her|their)\b)(?:[\w-]+ ){0,3}(?:allerg(?:y|ies)|"
            r"intolerance|adhd|asthma|diabetes|migraines|arthritis|dyslexia|autism|epilepsy|anxiety|depression|"
            r"bad back|bad knee|flat feet)\b|do not own a car\b|"
            r"work (?:from home|remotely|nights|shifts|part-time|full-time)\b))",
            FLAGS,
        ),
        "I ",
    ),
    # "can't do dairy", not "can't do the 3pm", "can't do lunch" nor "can't do it"
    (re.compile(rf"^(?=can not (?:do|eat|drink|have) (?:{_SUBSTANCES})\b)", FLAGS), "I "),
)
CONTRACTIONS = (
    (re.compile(r"\b(i|we|you|they)'m\b", FLAGS), r"\1 am"),
    (re.compile(r"\b[Ii]m\b"), "i am"),  # "im vegetarian", typed without the apostrophe ("IM" is a chat)
    (re.compile(r"\bcannot\b", FLAGS), "can not"),
    # typed without the apostrophe: "I cant log in", "I dont eat pork"
    (re.compile(r"\bcant\b", FLAGS), "can not"),
    (re.compile(r"\bwont\b", FLAGS), "will not"),
    (re.compile(r"\b(do|does|did|is|are|was|were|has|have|had|would|should|could)nt\b", FLAGS), r"\1 not"),
    (re.compile(r"\b(i|we|you|they)'re\b", FLAGS), r"\1 are"),
    (re.compile(r"\b(i|we|you|they)'ve\b", FLAGS), r"\1 have"),
    (re.compile(r"\b(i|we|you|they)'d\b", FLAGS), r"\1 would"),
    (re.compile(r"\b(i|we|you|they)'ll\b", FLAGS), r"\1 will"),
    (re.compile(r"\bwon't\b", FLAGS), "will not"),
    (re.compile(r"\bcan't\b", FLAGS), "can not"),
    (re.compile(r"\b(\w+)n't\b", FLAGS), r"\1 not"),
    (re.compile(r"\b(what|it|that|there|here|he|she|name)'s\b", FLAGS), r"\1 is"),
    # "Ana's my manager", but "my wife's name": a possessive stays a word.
    (re.compile(r"\b(\w+)'s(?=\s+(?:my|our|a|an|the|not|very|really|so|too|in|at|from)\b)", FLAGS), r"\1 is"),
    (re.compile(r"\b(\w+)'s\b", FLAGS), r"\1s"),
)
