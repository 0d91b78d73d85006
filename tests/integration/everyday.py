"""An everyday assistant's catalog and ten cases where something the user said once matters later.

Each case: what the user said in one session, a request in a later session, and the function
that request routes to, whose description or parameters are where the memory matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _function(name: str, description: str, **parameters: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return {"name": name, "description": description, "parameters": {"type": "object", "properties": properties}}


CATALOG: list[dict[str, Any]] = [
    _function(
        "find_restaurants",
        "Find restaurants near a place by cuisine, price range and dietary needs, with availability.",
        location="address, landmark or neighborhood",
        cuisine="type of food",
        dietary_restrictions="vegetarian, vegan, gluten-free, allergies to avoid",
        time="when to eat",
    ),
    _function(
        "book_flight",
        "Book a flight for a passenger, choosing the fare, the seat and the meal.",
        origin="departure city or airport",
        destination="arrival city or airport",
        date="departure date",
        seat="seat preference: aisle, window or middle",
        meal="special meal request",
    ),
    _function(
        "book_hotel",
        "Reserve a hotel room for given dates, with room type and special requests.",
        location="city or area",
        check_in="arrival date",
        check_out="departure date",
        max_price_per_night="budget per night",
        special_requests="pets, accessibility, late arrival",
    ),
    _function(
        "get_distance",
        "How far it is between two places: the distance and the travel time by car, train or on foot.",
        origin="start",
        destination="end",
        units="kilometers or miles",
    ),
    _function(
        "get_weather",
        "Current weather and forecast for a location.",
        location="city; the user's home when not given",
        days="how many days of forecast",
        units="celsius or fahrenheit",
    ),
    _function(
        "page_oncall",
        "Page the on-call responders of a team about an incident, by phone and push notification.",
        team="the on-call rotation or team to page",
        service="the affected service",
        message="what is happening",
        severity="sev1 to sev4",
    ),
    _function(
        "deploy_service",
        "Deploy a version of a service to a Kubernetes cluster and environment.",
        service="service name",
        version="build or image tag",
        cluster="target cluster",
        environment="production or staging",
    ),
    _function(
        "book_taxi",
        "Book a taxi or a ride that takes the user from a pickup point to a destination such as a station, "
        "an airport or an address, choosing the vehicle type.",
        pickup="where to be picked up",
        destination="where to go",
        vehicle="standard, large, wheelchair-accessible",
    ),
    _function(
        "send_email",
        "Compose and send an email to people by name or address.",
        to="recipients",
        subject="subject line",
        body="message text",
    ),
    _function(
        "recommend_movies",
        "Recommend movies and films to watch, for a movie night alone or with family and kids, by genre, "
        "mood and audience, with age ratings.",
        genre="e.g. comedy, animation",
        audience="who is watching: adults, children and their ages",
    ),
    _function(
        "convert_currency",
        "Convert an amount from one currency to another at today's rate.",
        amount="amount",
        from_currency="source currency",
        to_currency="target currency",
    ),
    _function(
        "create_calendar_event",
        "Create an event on the user's calendar and invite attendees.",
        title="title",
        start="start time",
        attendees="people to invite",
    ),
]


@dataclass(frozen=True)
class Case:
    """A statement, a later request it matters for, and the function that request routes to."""

    said: str
    memory: str
    request: str
    function: str


CASES: list[Case] = [
    Case(
        "Please remember that I am vegetarian and allergic to peanuts.",
        "I am vegetarian and allergic to peanuts.",
        "Recommend a restaurant near the Louvre for tonight",
        "find_restaurants",
    ),
    Case(
        "I prefer aisle seats.", "I prefer aisle seats.", "Book a flight from Paris to New York on May 3", "book_flight"
    ),
    Case(
        "I have a dog, a small beagle called Rex.",
        "I have a dog, a small beagle called Rex.",
        "Book a hotel in Lyon for the first weekend of June",
        "book_hotel",
    ),
    Case("I use metric units.", "I use metric units.", "How far is it from Lyon to Geneva?", "get_distance"),
    Case(
        "The payments team's on-call rotation is ours: payments-sre.",
        "The payments team's on-call rotation is ours: payments-sre.",
        "Page someone, the checkout is down",
        "page_oncall",
    ),
    Case(
        "Our production cluster is prod-eu-1.",
        "Our production cluster is prod-eu-1.",
        "Deploy version 2.4.1 of the checkout service to production",
        "deploy_service",
    ),
    Case("I use a wheelchair.", "I use a wheelchair.", "Get me a ride to the train station", "book_taxi"),
    Case(
        "My manager is Ana Silva, ana.silva@acme.com.",
        "My manager is Ana Silva, ana.silva@acme.com.",
        "Email my weekly report to my boss",
        "send_email",
    ),
    Case("I live in Porto.", "I live in Porto.", "Will it rain this weekend?", "get_weather"),
    Case(
        "My daughter Lea is seven.",
        "My daughter Lea is seven.",
        "Suggest a movie for our family night",
        "recommend_movies",
    ),
]


# Forty more things one user has said, on topics of their own: with the ten cases' statements, a
# user of fifty memories, among which the one a request needs must still come back.
OTHER_MEMORIES: list[str] = [
    "I play the cello in an amateur orchestra.",
    "My favourite author is José Saramago.",
    "I support Benfica.",
    "I collect vinyl records from the seventies.",
    "I am learning Japanese.",
    "I grew up in a small village in the Alentejo.",
    "I studied chemistry at university.",
    "I run a marathon every spring.",
    "I knit my own sweaters.",
    "I don't like talking about politics.",
    "My favourite colour is green.",
    "I read science fiction before bed.",
    "I am a volunteer firefighter.",
    "I keep bees on my balcony.",
    "I write poetry in my spare time.",
    "My favourite painter is Vermeer.",
    "I can't swim.",
    "I am colour-blind.",
    "I am left-handed.",
    "I play chess online most evenings.",
    "I brew my own beer.",
    "I listen to podcasts about history.",
    "I am a night owl.",
    "I do yoga twice a week.",
    "My favourite season is autumn.",
    "I speak Portuguese, English and some French.",
    "I restore old furniture.",
    "I am saving up for a sailboat.",
    "I love crossword puzzles.",
    "I grow tomatoes and basil in my garden.",
    "I have a tattoo of a compass.",
    "I sing in a choir.",
    "My favourite board game is Catan.",
    "I used to live in Brazil.",
    "I follow Formula 1.",
    "I am a member of the local astronomy club.",
    "I paint watercolours of the sea.",
    "I go fishing with my father.",
    "I meditate every morning.",
    "I dislike the smell of coffee.",
]
