"""The catalog ``make bench-memory`` routes PrefEval's requests in: an everyday assistant's functions.

One or two functions per kind of request PrefEval asks about (learning, games, shows, beauty,
fitness, pets, clothes, cars, trips, transport), written like the example catalogs (a
description that says what the function does and parameters that say what it needs), plus
everyday ones that compete with them (restaurants, flights, hotels, email, notes).
"""

from __future__ import annotations

from typing import Any


def _function(name: str, description: str, **parameters: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return {"name": name, "description": description, "parameters": {"type": "object", "properties": properties}}


ASSISTANT: list[dict[str, Any]] = [
    _function(
        "find_learning_resources",
        "Find courses, books, tutorials and study methods for a subject, matched to how the learner likes to learn.",
        subject="what to learn",
        level="beginner, intermediate or advanced",
        format="video, reading, hands-on, group class, one-on-one tutoring",
    ),
    _function(
        "recommend_games",
        "Recommend video games or board games by genre, platform and play style, with ratings and where to buy.",
        genre="e.g. strategy, puzzle, role-playing",
        platform="PC, console, mobile or tabletop",
        players="single player, co-op or multiplayer",
        content="themes and content to include or avoid",
    ),
    _function(
        "recommend_shows",
        "Recommend movies, TV series and documentaries to watch, by genre, mood and streaming service.",
        genre="e.g. comedy, drama, thriller",
        service="streaming service",
        content="themes and content to include or avoid",
    ),
    _function(
        "search_beauty_products",
        "Search skincare, makeup, hair care and fragrance products by skin or hair type and ingredients.",
        category="e.g. moisturizer, foundation, shampoo, perfume",
        skin_type="dry, oily, combination, sensitive",
        exclude_ingredients="ingredients the shopper avoids or is allergic to",
    ),
    _function(
        "plan_workout",
        "Build a workout routine or suggest exercises and fitness classes for a goal, with equipment and intensity.",
        goal="e.g. strength, endurance, weight loss",
        equipment="available equipment, or none",
        limitations="injuries, health conditions or exercises to avoid",
    ),
    _function(
        "suggest_meals",
        "Suggest recipes, snacks and meal plans for a diet and a fitness goal.",
        diet="dietary restrictions and preferences",
        goal="e.g. muscle gain, quick lunch",
    ),
    _function(
        "pet_care_advice",
        "Advice on choosing, feeding, training and caring for pets, and products for them.",
        species="dog, cat, fish, bird...",
        topic="e.g. food, training, fleas, containment, adoption",
    ),
    _function(
        "search_clothing",
        "Search clothes, shoes and accessories by style, size, material, color and occasion.",
        item="e.g. coat, dress, sneakers",
        style="style and fit",
        materials="materials wanted or avoided",
        occasion="e.g. work, winter formal",
    ),
    _function(
        "search_vehicles",
        "Search new and used cars to buy or lease by body type, powertrain, seats and features.",
        body_type="sedan, SUV, minivan, pickup",
        powertrain="gasoline, hybrid, electric",
        transmission="manual or automatic",
        features="required features",
    ),
    _function(
        "find_activities",
        "Find things to do at a travel destination: tours, attractions, outdoor activities and events.",
        destination="city or region",
        interests="kinds of activities the traveler enjoys or avoids",
        date="when",
    ),
    _function(
        "plan_transport",
        "Plan how to get from one place to another or around a city: trains, buses, ferries, taxis, rentals.",
        origin="starting point",
        destination="where to go",
        modes="transport modes wanted or avoided",
    ),
    _function(
        "find_restaurants",
        "Find restaurants near a place by cuisine, price and dietary needs, with opening hours and availability.",
        location="address, landmark or neighborhood",
        cuisine="type of food",
        dietary_restrictions="vegetarian, vegan, gluten-free, allergies",
        time="when",
    ),
    _function(
        "search_flights",
        "Search flights between two airports for given dates, with prices, stops and seats.",
        origin="departure airport",
        destination="arrival airport",
        date="departure date",
        cabin_class="economy, business, first",
        seat_preference="aisle, window",
    ),
    _function(
        "search_hotels",
        "Search hotels in a city for given dates with price, rating and amenities.",
        location="city or area",
        check_in="arrival date",
        check_out="departure date",
        amenities="e.g. pool, parking, pets allowed, accessible rooms",
    ),
    _function(
        "send_email",
        "Compose and send an email to one or more recipients.",
        to="recipients",
        subject="subject line",
        body="message text",
    ),
    _function(
        "create_note",
        "Save a note or a to-do item in the user's notebook.",
        title="title",
        text="content",
    ),
    _function(
        "get_weather",
        "Current weather and forecast for a city.",
        location="city",
        units="metric or imperial",
    ),
    _function(
        "search_web",
        "Search the web for general information and return the top results with snippets.",
        query="what to search for",
    ),
]
