"""What becomes a memory: durable statements about the user, never requests or questions."""

from __future__ import annotations

import time

import pytest

from router.sessions.expiry import expires_at
from router.sessions.extraction import (
    StatementExtractor,
    forget_requests,
    is_memory,
    memory_candidates,
    without_statements,
)
from tests.everyday_statements import KEPT, NOT_KEPT, TROUBLE

DURABLE = [
    # preferences and dislikes
    "I prefer aisle seats.",
    "I strictly avoid red meat.",
    "I can't stand horror films.",
    "Spicy food is not for me, I really dislike it.",
    "I'm a huge fan of jazz.",
    "I like my coffee black.",
    # constraints: allergies, diets, budgets, accessibility
    "I am vegetarian and allergic to peanuts.",
    "I'm vegan.",
    "I'm lactose intolerant.",
    "My budget is 300 euros per night.",
    "We never spend more than 2000 dollars on a holiday.",
    "I use a wheelchair, so step-free access matters to me.",
    "I need wheelchair access.",
    "I get motion sick on boats.",
    "Due to a back injury, I need to avoid heavy lifting.",
    # people and relations
    "My wife is called Ana.",
    "Ana is my manager.",
    "My partner, Alex, is vegan.",
    "My partner, Alex, never eats meat.",
    "My daughter Lea is seven.",
    "We have two kids and a dog.",
    "I have a golden retriever named Max.",
    # places
    "I live in Lyon.",
    "Our office is in Berlin, near Alexanderplatz.",
    "I work from home on Fridays.",
    "I don't work on Fridays.",
    "I really don't work on Fridays.",
    # identifiers
    "Our production cluster is prod-eu-1.",
    "My employee number is 44871.",
    "Our on-call team is payments-sre.",
    "The payments on-call rotation is ours: payments-sre.",
    "Our main repository is acme/checkout.",
    # standing instructions and habits
    "Always use metric units.",
    "Never book me on red-eye flights.",
    "From now on, answer in French.",
    "I use metric units.",
    "I require step-free access.",
    "I usually fly with Air France.",
    "Call me Sam.",
    "We deploy on Tuesdays only.",
]

NOT_MEMORIES = [
    "Recommend a restaurant near the Louvre for tonight.",
    "Book a flight from Lisbon to Rome next Friday.",
    "Can you find me a hotel in Rome?",
    "What is the weather in Oslo?",
    "How far is Lyon from Paris?",
    "I'd like a table for two at eight.",
    "I want to book a hotel for three nights.",
    "I need a taxi to the airport.",
    "I'm looking for a good sushi place.",
    "I'm flying to Rome tomorrow.",
    "I have a list of numbers [3, 5, 7] and want their mean.",
    "Page the on-call engineer for the checkout service.",
    "Send the report to my manager.",
    "Find my last order.",
    "Could you convert 450 euros to dollars?",
    "Is there a direct train to Milan?",
    "Please deploy version 2.4.1 to production.",
    "I was wondering if you could check my booking.",
    "Help me write an email to the team.",
    "Tell me a joke.",
    "Thanks, that's great.",
    "Show me the seat map of TP 840",
    "I'm visiting Madrid next spring and would like ideas.",
    "I also need the market size of smartphones in the United States.",
    "We really want a quote for the new office chairs.",
    "I would also like to know the estimated value of an apartment in New York.",
    "I am keen to see the latest figures of Quasar Ltd.",
]


@pytest.mark.parametrize("sentence", DURABLE)
def test_durable_statements_about_the_user_are_kept(sentence: str) -> None:
    assert is_memory(sentence) or StatementExtractor().extract(sentence), sentence


@pytest.mark.parametrize("sentence", NOT_MEMORIES)
def test_requests_questions_and_one_off_plans_are_not(sentence: str) -> None:
    assert StatementExtractor().extract(sentence) == [], sentence


def test_a_message_keeps_its_statements_and_drops_its_requests() -> None:
    text = "Please remember that I am vegetarian and allergic to peanuts. Recommend a restaurant near the Louvre."
    assert StatementExtractor().extract(text) == ["I am vegetarian and allergic to peanuts."]
    assert StatementExtractor().extract("Remember: the staging cluster is stage-2.") == [
        "The staging cluster is stage-2."
    ]
    mixed = "I'm looking for a fuel-efficient car, but I despise the look of hybrids."
    assert StatementExtractor().extract(mixed) == [mixed]


# A sentence that asks or reports trouble, with a clause that states a preference or a slot.
CLAUSES = {
    "Book me a table for two, I am vegetarian.": ["I am vegetarian."],
    "I'm not hungry at all, I'm vegetarian.": ["I'm vegetarian."],
    "I am not coming from Berlin, I live in Porto.": ["I live in Porto."],
    "My flight was cancelled; I prefer aisle seats by the way.": ["I prefer aisle seats by the way."],
    "I am vegetarian and I need a restaurant near the Louvre.": ["I am vegetarian."],
    "Find a flight to Rome, but I hate red-eye flights.": ["I hate red-eye flights."],
    "I'm hungry, and I'm allergic to peanuts.": ["I'm allergic to peanuts."],
    "Find me a hotel in Berlin \u2014 I hate hotels without a gym.": ["I hate hotels without a gym."],
    "I'm vegetarian, any good places near the office?": ["I'm vegetarian."],
    "I'm lactose intolerant, can you find oat milk?": ["I'm lactose intolerant."],
    "My budget for the new laptop is 1200 euros, what do you have?": ["My budget for the new laptop is 1200 euros."],
    "Book me a hotel in Rome, I need wheelchair access.": ["I need wheelchair access."],
    "If I live in Porto, what is the best airport?": [],
    # a clause that sets up the request, a condition, a passing plan: nothing
    "I have an audio file, and I would like to find its beats.": [],
    "If I have 100 dollars, I prefer stocks.": [],
    "Drop my hotel in Rome, I'm not going any more.": [],
    "I'm in Rome, and I need a taxi to the airport.": [],
}


@pytest.mark.parametrize(("sentence", "kept"), CLAUSES.items())
def test_a_clause_stating_a_preference_is_kept_from_a_sentence_that_asks(sentence: str, kept: list[str]) -> None:
    assert StatementExtractor().extract(sentence) == kept


def test_each_statement_is_kept_once_and_cleaned() -> None:
    text = "  I prefer window seats.\n\nI prefer window seats.  - my name is Frida Kahlo."
    assert StatementExtractor().extract(text) == ["I prefer window seats.", "My name is Frida Kahlo."]


def test_only_external_user_messages_are_candidates() -> None:
    messages = [
        {"role": "assistant", "content": "I am vegetarian too."},
        {"role": "user", "content": "I live in Porto.", "source": "context_provider"},
        {"role": "user", "content": "I work at a bank.", "source": "history"},
        {"role": "user", "content": "I love Rome."},
        {"role": "system", "content": "I am the system."},
    ]
    assert memory_candidates(messages) == ["I love Rome."]


def test_everyday_statements_of_each_kind_are_kept() -> None:
    extractor = StatementExtractor()
    for kind, statements in KEPT.items():
        missed = [s for s in statements if not extractor.extract(s)]
        assert len(missed) <= len(statements) * 0.05, (kind, missed)


def test_a_statement_beside_a_question_is_kept_without_the_question() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Since I'm allergic to cats, what dog breeds are best?") == ["I'm allergic to cats."]
    assert extractor.extract("If I have 100 dollars, what can I buy?") == []
    # The task at hand, not who the user is.
    assert extractor.extract("I'm in Paris, what should I see?") == []


def test_a_change_dated_in_the_past_keeps_the_end_it_names() -> None:
    assert expires_at("I started physio last week for six weeks.") is not None
    assert expires_at("We moved to Lisbon last month.") is None


def test_role_play_keeps_nothing_of_its_own_but_what_follows_it() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Let's role-play: I'm a customer complaining about a late delivery.") == []
    said = "Let's roleplay a job interview. I'm a nurse with 5 years ICU experience."
    assert extractor.extract(said) == ["I'm a nurse with 5 years ICU experience."]
    assert extractor.extract("For this story, I'm a 40-year-old detective named Rosa.") == []


def test_questions_requests_and_secrets_are_not_kept_even_when_asked() -> None:
    extractor = StatementExtractor()
    assert [(s, extractor.extract(s)) for s in NOT_KEPT if extractor.extract(s)] == []


def test_a_situation_of_a_time_is_kept_and_a_past_one_is_not() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("I'm on call until Friday.") == ["I'm on call until Friday."]
    assert extractor.extract("We met yesterday.") == []
    assert extractor.extract("Our anniversary is June 12.") == ["Our anniversary is June 12."]
    # A yearly date is a fact: it does not end the memory.
    assert expires_at("My daughter Emma turns 10 on June 3, she loves Lego.") is None


def test_words_that_only_open_a_statement_are_left_out() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Btw i live in manchester") == ["I live in manchester"]
    assert extractor.extract("Actually I moved to Lisbon last month.") == ["I moved to Lisbon last month."]
    assert extractor.extract("Oh and always use metric units.") == ["Always use metric units."]
    assert extractor.extract("Actually, book the 9am flight.") == []


def test_a_quote_that_closes_a_quoted_word_stays() -> None:
    extractor = StatementExtractor()
    said = "Sign my emails as 'Best, Dan' not 'Regards'"
    assert extractor.extract(said) == [said]
    assert extractor.extract('My favourite film is "Up"') == ['My favourite film is "Up"']
    assert extractor.extract('"I prefer aisle seats."') == ["I prefer aisle seats."]


@pytest.mark.parametrize(
    ("typed", "written"),
    [
        ("I cant log in to my account", "I can't log in to my account"),
        ("I dont eat pork", "I don't eat pork"),
        ("my package hasnt arrived", "my package hasn't arrived"),
        ("I wont fly Ryanair", "I won't fly Ryanair"),
    ],
)
def test_a_contraction_without_its_apostrophe_reads_as_with_it(typed: str, written: str) -> None:
    assert bool(StatementExtractor().extract(typed)) == bool(StatementExtractor().extract(written))


def test_im_without_its_apostrophe_is_i_am() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("im vegetarian") == ["I'm vegetarian"]
    assert extractor.extract("Im allergic to nuts") == ["I'm allergic to nuts"]
    assert extractor.extract("The IM channel is #ops") == []


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        (
            "Find me a flight from Lisbon to Rome next Friday. I prefer aisle seats.",
            "Find me a flight from Lisbon to Rome next Friday.",
        ),
        ("I am vegetarian. Find a restaurant near the Colosseum!", "Find a restaurant near the Colosseum!"),
        ("I need a hotel in Rome for two nights", "I need a hotel in Rome for two nights"),
        ("I am Alex.", ""),
        ("Find flights to Rome. I always book aisle seats.", "Find flights to Rome."),
        ("I prefer window seats: find flights to Rome.", "I prefer window seats: find flights to Rome."),
        ("I need flights to Rome, but I prefer aisle seats.", "I need flights to Rome, but I prefer aisle seats."),
    ],
)
def test_the_context_keeps_what_was_asked_without_who_the_user_is(text: str, asked: str) -> None:
    assert without_statements(text) == asked


def test_a_title_or_an_abbreviation_does_not_end_a_sentence() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("I live in St. Louis.") == ["I live in St. Louis."]
    text = "Dr. Smith is my doctor. Book an appointment with Dr. Smith."
    assert extractor.extract(text) == ["Dr. Smith is my doctor."]
    assert without_statements(text) == "Book an appointment with Dr. Smith."
    # "St." as a street ends the sentence when a request follows.
    text = "I live on Baker St. Book a cab to the airport."
    assert extractor.extract(text) == ["I live on Baker St."]
    assert without_statements(text) == "Book a cab to the airport."


@pytest.mark.parametrize("sentence", TROUBLE)
def test_trouble_is_not_kept_and_stays_in_the_context(sentence: str) -> None:
    assert StatementExtractor().extract(sentence) == []
    assert without_statements(sentence) == sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "My office is down the road from the station.",
        "I'm sick of pop music.",
        "My flights are always delayed.",
        "I can't stand loud restaurants.",
        "I prefer detailed error messages.",
        "I'm the outage coordinator for our team.",
        "My favorite show is Lost.",
        "My father has been dead for ten years.",
        "Our cabin is down south.",
        "My phone is locked to Verizon.",
        "I'm stuck with a Windows laptop at work.",
        "I lost my sense of smell.",
        "We are late risers.",
        "My bus is constantly late.",
        "I cannot eat gluten.",
        "We have a cold storage unit.",
        "I have a cold brew every morning.",
    ],
)
def test_lasting_statements_with_words_of_trouble_are_kept(sentence: str) -> None:
    assert StatementExtractor().extract(sentence) == [sentence]


def test_pasted_text_stays_in_the_context_and_costs_the_patterns_nothing() -> None:
    # Over MAX_CHARS a sentence is pasted text, not a statement; "1" * 100,000 once took seconds to read.
    long_statement = "I prefer aisle seats " + "and quiet rooms " * 30 + "on every trip."
    assert without_statements(long_statement) == long_statement
    started = time.perf_counter()
    for pasted in ("1" * 100_000, "a_" * 50_000):
        assert without_statements(pasted) == pasted
    assert time.perf_counter() - started < 5


def test_someone_elses_quoted_words_are_not_the_users() -> None:
    extractor = StatementExtractor()
    forwarded = (
        "Please reply to this email from Anna and say yes:\n\n> Hi Sam,\n"
        "> I just moved to Oslo and I'm vegan now, so let's meet there.\n> I hate early meetings."
    )
    assert extractor.extract(forwarded) == []
    assert extractor.extract("My colleague wrote: I am allergic to shellfish. Can you check the menu?") == []
    assert extractor.extract("I live in Porto.\n> I live in Oslo.") == ["I live in Porto."]


def test_asking_to_forget_something_does_not_store_it() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Forget that I live in Porto.") == []
    assert extractor.extract("Please forget that I'm vegetarian") == []
    assert extractor.extract("Don't forget that I'm vegan.") == ["I'm vegan."]


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Forget that I live in Porto.", ["I live in Porto"]),
        ("Please, forget my address. Thanks!", ["my address"]),
        ("Hi. Forget what I told you about peanuts.", ["peanuts"]),
        ("forget where I work", ["I work"]),
        ("Forget that I'm vegan.\nForget my seat preference!", ["I'm vegan", "my seat preference"]),
        ("Actually, forget that I love jazz.", ["I love jazz"]),
        ("Oh, and forget my address.", ["my address"]),
        ("Can you forget that I live in Porto?", ["I live in Porto"]),
        # the request ends with its clause: what follows is said as any statement
        ("Forget that I'm vegan, I'm vegetarian now.", ["I'm vegan"]),
        # not about the user: a task dropped, or nothing named
        ("Forget about the hotel, book a flight instead.", []),
        ("Forget it.", []),
        ("Forget that, I live in Lisbon now.", []),
        ("Don't forget that I'm vegan.", []),
        ("> Forget that I live in Porto.", []),
    ],
)
def test_what_the_user_asks_to_forget_is_read_from_their_words(text: str, asked: list[str]) -> None:
    assert [request for _, request in forget_requests(text) if request is not None] == asked


def test_a_text_is_cut_after_each_request_to_forget() -> None:
    # What comes before a request may be forgotten by it; what follows is said after it.
    assert forget_requests("I love jazz. Forget that I love jazz. I like techno.") == [
        ("I love jazz.", "I love jazz"),
        ("I like techno.", None),
    ]
    assert forget_requests("Forget that I'm vegan, I'm vegetarian now.") == [
        ("", "I'm vegan"),
        ("I'm vegetarian now.", None),
    ]
    assert StatementExtractor().extract("Actually, forget that I love jazz.") == []
    # A text that asks nothing to be forgotten is read as written: its lines stay apart.
    lines = "I live in Porto\nI'm vegan\nI work at Acme"
    assert forget_requests(lines) == [(lines, None)]
    assert forget_requests("I live in Porto\nForget that I'm vegan\nI work at Acme") == [
        ("I live in Porto", "I'm vegan"),
        ("I work at Acme", None),
    ]
    # A comma inside a number ends nothing.
    assert forget_requests("Forget that my budget is 1,500 euros.")[0][1] == "my budget is 1,500 euros"


def test_a_reminder_or_trouble_after_remember_is_no_memory() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Remember to book the hotel.") == []
    assert extractor.extract("Note to self: buy milk.") == []
    assert extractor.extract("FYI the wifi is down.") == []
    assert extractor.extract("Remember: the staging cluster is stage-2.") == ["The staging cluster is stage-2."]
    assert extractor.extract("FYI I'm on call this week.") == ["I'm on call this week."]


def test_the_name_a_user_goes_by_is_kept_however_it_is_said() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("You can call me Sam.") == ["You can call me Sam."]
    assert extractor.extract("My name's Sam.") == ["My name's Sam."]
    assert extractor.extract("Can you call me a taxi?") == []


def test_what_a_person_needs_of_every_service_is_kept_from_beside_a_request() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Get me a cab to the airport, I use a wheelchair.") == ["I use a wheelchair."]
    assert extractor.extract("Find me a hotel in Rome - I'm celiac.") == ["I'm celiac."]
    assert extractor.extract("Please don't suggest bars, I'm in recovery.") == ["I'm in recovery."]


@pytest.mark.parametrize(
    "habit",
    [
        "I'm busy on mondays.",
        "I'm busy in the mornings.",
        "I am in meetings all day on Mondays.",
        "I am on the road most weeks, so prefer mobile-friendly answers.",
        "I'm on my way to becoming a vegetarian.",
        "I am away from my desk on Fridays.",
    ],
)
def test_a_habit_is_kept_where_the_same_state_now_is_not(habit: str) -> None:
    assert StatementExtractor().extract(habit) == [habit]


def test_the_users_own_words_after_said_are_kept() -> None:
    extractor = StatementExtractor()
    assert "I prefer window seats." in extractor.extract("I said: I prefer window seats.")
    assert extractor.extract("He asks: are you vegan? I am vegan.") == ["I am vegan."]


def test_a_standing_rule_or_the_users_own_after_remember_is_kept() -> None:
    extractor = StatementExtractor()
    assert extractor.extract("Remember to always use metric units.") == ["To always use metric units."]
    assert extractor.extract("Remember about my nut allergy.") == ["About my nut allergy."]
    assert extractor.extract("Remember, to me, price matters more than speed.") == [
        "To me, price matters more than speed."
    ]


def test_identifiers_are_kept_where_tokens_are_refused() -> None:
    extractor = StatementExtractor()
    cluster = "Our production cluster is prod-eu-central-1-payments."
    assert extractor.extract(cluster) == [cluster]
    assert extractor.extract("My github pat is ghp_abcd1234efgh5678ijkl9012mnop.") == []
    assert extractor.extract("You can call me a taxi now.") == []
