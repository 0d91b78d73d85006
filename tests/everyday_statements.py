"""Everyday statements a person expects an assistant to keep, and ones it must not.

The development set of what becomes a memory, by kind. Written for the tests; ``make
bench-memory`` reports the share of each kind that is stored. ``BOUNDED`` statements hold for
a time the sentence states or implies, so they are kept with an expiry.
"""

from __future__ import annotations

PEOPLE = [
    "My wife's name is Ana and our anniversary is June 12.",
    "My wife Ana is a nurse.",
    "My manager runs the Lisbon office.",
    "My husband is called Tom.",
    "My mother lives in Porto.",
    "My brother Luis works at Google.",
    "My best friend is Marta.",
    "My son Leo is allergic to cats.",
    "Our daughter turns six in March.",
    "My boss is Sarah Chen.",
    "My partner doesn't eat pork.",
    "My assistant Julia handles my calendar.",
    "My dad's birthday is on October 3rd.",
]

ROLES = [
    "I'm the on-call engineer for the payments team this week.",
    "I'm on call until Friday.",
    "I'm travelling until Friday.",
    "I'm working from our Berlin office this month.",
    "I'm out of office until Monday.",
    "I'm on parental leave until September.",
    "I'm the tech lead of the checkout squad.",
    "I'm a product manager at Acme.",
    "I work as a nurse on night shifts.",
    "I'm staying in Lisbon for the next two weeks.",
    "I am the admin of the staging cluster.",
    "This week I'm covering for Paul on support.",
    "I'm in charge of the quarterly report this quarter.",
]

POSSESSIONS = [
    "I travel with my dog Max, a 30 kg labrador.",
    "I have two cats.",
    "I drive a Tesla Model 3.",
    "We have a three-year-old son.",
    "I own an electric bike.",
    "My car is a grey Volvo XC60.",
    "I have a Pixel 8 phone.",
    "We have a toddler and a baby.",
    "I have a season ticket for Benfica.",
    "My laptop is a MacBook Pro.",
    "I care for my elderly father.",
    "Our family has a golden retriever.",
]

INSTRUCTIONS = [
    "Please remember that I am vegetarian and allergic to peanuts.",
    "Always book me an aisle seat.",
    "Never schedule meetings before 9am.",
    "Remember that my budget for hotels is 150 euros a night.",
    "From now on, send me summaries in bullet points.",
    "Always copy my assistant on travel emails.",
    "Don't forget that I prefer trains over flights in Europe.",
    "Never book me into hostels.",
    "Keep in mind that I don't drink alcohol.",
    "Use kilometers, not miles.",
    "Always answer me in Portuguese.",
    "Note that our team deploys only on Tuesdays.",
    "dont book me on red-eyes",
    "Don't call me before 9am.",
    "Find me a flight to Rome, and don't book me on red-eyes.",
]

PREFERENCES = [
    "I am vegetarian and allergic to peanuts.",
    "I prefer window seats on long flights.",
    "I love Italian food.",
    "I can't stand loud restaurants.",
    "I'm a morning person.",
    "I like quiet hotels away from the centre.",
    "I only drink decaf.",
    "I'm afraid of flying.",
    "I hate horror movies.",
    "I like jazz.",
    "Spicy food is too much for me.",
    "I'm gluten intolerant.",
]

KEPT = {
    "people": PEOPLE,
    "roles and time-bound situations": ROLES,
    "possessions and dependants": POSSESSIONS,
    "standing instructions": INSTRUCTIONS,
    "preferences": PREFERENCES,
}

# Held only for a while: each statement and the date its memory expires at the end of, when
# said on Wednesday 2026-06-10 (a fixed day, so the expected dates hold whenever the tests run).
SAID_ON = (2026, 6, 10)
BOUNDED = {
    "I'm the on-call engineer for the payments team this week.": (2026, 6, 14),
    "I'm on call until Friday.": (2026, 6, 12),
    "I'm travelling until Friday.": (2026, 6, 12),
    "I'm working from our Berlin office this month.": (2026, 6, 30),
    "I'm out of office until Monday.": (2026, 6, 15),
    "I'm on parental leave until September.": (2026, 9, 30),
    "I'm staying in Lisbon for the next two weeks.": (2026, 6, 24),
    "This week I'm covering for Paul on support.": (2026, 6, 14),
    "I'm in charge of the quarterly report this quarter.": (2026, 6, 30),
    "I'm in Rome tonight.": (2026, 6, 10),
    "I'm at a conference until the 19th.": (2026, 6, 19),
}

# Questions, one-off requests and secrets: never kept.
NOT_KEPT = [
    "What's the weather in Lisbon tomorrow?",
    "Book a table for two at eight tonight.",
    "Can you find my wife's flight confirmation?",
    "Send my manager the quarterly report.",
    "Is my dog allowed in the hotel?",
    "I need a taxi to the airport in 20 minutes.",
    "My password is hunter2.",
    "My API key is sk-live-1234abcd.",
    "My card number is 4111 1111 1111 1111.",
    "Remember that my PIN is 4321.",
    "my login for the vendor portal is dan.k / Sunshine!23",
    "my 2fa code is 492013",
    "The door code for our airbnb is 4821.",
    "Our prod db connection string is postgres://admin:S3cr3tPass@db.prod:5432/app",
    "My AWS access id is AKIAIOSFODNN7EXAMPLE.",
    "My card is 4111 1111 1111 1111.",
    "My pw is hunter2.",
    "My openai key is sk-proj-abcdef1234567890abcdef.",
    "My github pat is ghp_abcd1234efgh5678ijkl9012mnop.",
    "My mother's maiden name is Smith.",
    "Remember my locker combination is 12-34-56.",
    "I'd like to book a flight to Rome next Friday.",
    "Find hotels near the Louvre.",
    "Who is on call for payments this week?",
    "Please remind me to call my mother on Sunday.",
    "I'm looking for a vegetarian restaurant.",
    "Drop my hotel in Rome, I'm not going any more.",
    "I'm not coming to the meeting.",
    "Don't send it yet.",
    "Do not cancel the 9am meeting.",
    "Don't book anything until I confirm.",
    "Find the details of case 123456 in Texas. Don't return full text.",
    "Book it, but don't charge me yet.",
    "Book a table for two, and don't tell my wife.",
    "Don't call me, I'm in a meeting.",
    "Don't call me, I'm busy right now.",
    "Never mind, find me the fastest flight.",
    "Never mind the budget.",
]

# Trouble and passing states: they ask for help now, and are not who the user is. Never kept.
TROUBLE = [
    "My flight was cancelled.",
    "Our payments service is down.",
    "I can't log in to my account.",
    "My card was declined.",
    "My package hasn't arrived.",
    "I'm hungry.",
    "My train is running late.",
    "Our checkout page keeps crashing.",
    "My luggage was lost.",
    "The VPN is not working for me.",
    "I'm stuck at the airport.",
    "We were overcharged for our last order.",
    "I lost my passport.",
    "I missed my connection in Frankfurt.",
    "My order arrived damaged.",
    "Our website has been down since this morning.",
    "My internet connection keeps dropping.",
    "I got locked out of my account.",
    "My refund still hasn't come through.",
    "The printer in our office is jammed.",
    "I'm running late for my meeting.",
    "I'm locked out of my account.",
    "I cannot log in to my account.",
    "My app crashes on startup.",
    "My screen is cracked.",
    "My order hasn't shipped yet.",
    "I never received my refund.",
    "Our server is down in eu-west-1.",
    "Our servers are down unexpectedly.",
    "My son is sick.",
    "I have a headache.",
    "I have a cold and a sore throat.",
    "I have a cold today.",
    "Our website is down and customers are angry.",
    "I'm not hungry.",
    "We're out of coffee pods.",
    "My laptop battery is dying.",
    "I'm so annoyed with this airline.",
    "I cant log in to my account",
]

# A newer statement that replaces an older one: the same slot, or the same subject, with a new value.
UPDATES = [
    ("I live in Porto.", "We moved to Lisbon last month."),
    ("I live in Berlin.", "I'm now based in Munich."),
    ("I work at Acme.", "I joined Globex in May."),
    ("I work for the city council.", "I now work at a startup called Nimbus."),
    ("I'm vegetarian.", "I'm vegan now."),
    ("I'm vegan.", "I'm no longer vegan."),
    ("I prefer aisle seats.", "I prefer window seats these days."),
    ("Always book me an aisle seat.", "Always book me a window seat."),
    ("My budget is 300 euros per night.", "My budget is now 200 euros per night."),
    ("My hotel budget is 150 euros.", "My hotel budget is 120 euros."),
    ("My manager is Sarah.", "My manager is now Tom."),
    ("My wife's name is Ana.", "My wife's name is Maria."),
    ("Our production cluster is prod-eu-1.", "Our production cluster is prod-eu-2."),
    ("My phone number is +351 912 000 111.", "My phone number is +351 913 222 333."),
    ("My favourite airline is TAP.", "My favourite airline is KLM."),
    ("My home airport is OPO.", "My home airport is LIS."),
    ("My manager is Priya Nair.", "Marcus Lee is my new manager."),
    ("My manager is Priya Nair.", "I report to Marcus Lee now."),
    ("My manager is Priya Nair.", "I have a new manager, Marcus Lee."),
    ("I'm vegetarian.", "I'm not vegetarian anymore."),
    ("I work at Northwind.", "I just joined Contoso as a PM."),
    ("I live in Manchester.", "I just moved to Lisbon."),
]

# Alike, but both true: neither replaces the other.
NOT_UPDATES = [
    ("I like jazz.", "I like techno."),
    ("I love Italian food.", "I love Japanese food."),
    ("I have two cats.", "I have a dog."),
    ("I am allergic to peanuts.", "I am allergic to shellfish."),
    ("My wife is called Ana.", "My son is called Leo."),
    ("My manager is Sarah.", "My manager's manager is Paul."),
    ("I live in Porto.", "My mother lives in Lisbon."),
    ("I speak Portuguese.", "I speak English."),
    ("I prefer aisle seats.", "I prefer quiet hotels."),
    ("My budget for hotels is 150 euros.", "My budget for flights is 400 euros."),
    ("I work at Acme.", "My brother works at Google."),
    ("I'm vegetarian.", "I'm allergic to gluten."),
    ("I drive a Tesla.", "I drive to work on Mondays."),
    ("Never book me into hostels.", "Never schedule meetings before 9am."),
    ("I live in Porto.", "I lived in Brazil for ten years."),
]
