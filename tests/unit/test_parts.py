"""The parts of a turn: what routing and learning split a request into."""

from __future__ import annotations

import time

import pytest

from router.retrieval.parts import asks_action, parts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Get the pharmacodynamics of Aspirin. Then get the properties of Aspirin tablets. "
            "Lastly, validate the cleanliness of batch BA123.",
            [
                "Get the pharmacodynamics of Aspirin.",
                "get the properties of Aspirin tablets.",
                "validate the cleanliness of batch BA123.",
            ],
        ),
        (
            "Book a flight to Rome. Also, convert 100 euros to dollars.",
            ["Book a flight to Rome.", "convert 100 euros to dollars."],
        ),
        (
            "Ask Mr. Smith about the contract and then email the summary",
            ["Ask Mr. Smith about the contract", "email the summary"],
        ),
        (
            "Book an appointment with dr. Lee for Monday. Then ask prof. Brown for the slides.",
            ["Book an appointment with dr. Lee for Monday.", "ask prof. Brown for the slides."],
        ),
        (
            "Find hotels in St. Louis near Baker St. Book the cheapest for two nights.",
            ["Find hotels in St. Louis near Baker St.", "Book the cheapest for two nights."],
        ),
        (
            "Find the weather in Oslo, after that book a hotel near the station",
            ["Find the weather in Oslo", "book a hotel near the station"],
        ),
        (
            "1. find a hotel in Rome\n2. book a table for two\n- call a taxi at eight",
            ["find a hotel in Rome", "book a table for two", "call a taxi at eight"],
        ),
        (
            "First, check the weather in Paris, second book a hotel there",
            ["check the weather in Paris", "book a hotel there"],
        ),
        # Steps written in lower case, or after a semicolon, are sentences all the same.
        (
            "search hotels in rome. convert 100 eur to usd. check the status of flight tp 840.",
            ["search hotels in rome.", "convert 100 eur to usd.", "check the status of flight tp 840."],
        ),
        (
            "Search hotels in Rome; convert 100 EUR to USD",
            ["Search hotels in Rome;", "convert 100 EUR to USD"],
        ),
        (
            "what is the status of TP 840? also convert 100 eur to usd",
            ["what is the status of TP 840?", "convert 100 eur to usd"],
        ),
        (
            "check the status of flight tp 840. next, convert 100 eur to usd.",
            ["check the status of flight tp 840.", "convert 100 eur to usd."],
        ),
        # "No." before a number ends no sentence; a capital does.
        (
            "Book room No. 5 at the Ritz. Then check the status of flight TP 840.",
            ["Book room No. 5 at the Ritz.", "check the status of flight TP 840."],
        ),
        (
            "Get me a taxi to Terminal B. Also convert 100 EUR to USD.",
            ["Get me a taxi to Terminal B.", "convert 100 EUR to USD."],
        ),
        # An ordinal that names no step is a word of the request ("first class", "next Friday").
        (
            "Convert 100 EUR to USD. First class flights from Rome to Oslo please.",
            ["Convert 100 EUR to USD.", "First class flights from Rome to Oslo please."],
        ),
        (
            "Search flights to Rome, first class, then convert 100 EUR to USD",
            ["Search flights to Rome, first class", "convert 100 EUR to USD"],
        ),
        (
            "Convert 100 EUR to USD. Next Friday search flights to Oslo.",
            ["Convert 100 EUR to USD.", "Next Friday search flights to Oslo."],
        ),
        # A quotation is data: its sentences are not steps, and the turn's own sentences end after it.
        (
            'Email Dana the note "Hi Dana. The launch moved to Friday. Best, Alex", then book a room for Monday.',
            ['Email Dana the note "Hi Dana. The launch moved to Friday. Best, Alex"', "book a room for Monday."],
        ),
        (
            "Rate the sentiment of this review: “Great phone. The battery lasts all day.” Then post it to Slack.",
            ["Rate the sentiment of this review: “Great phone. The battery lasts all day.”", "post it to Slack."],
        ),
        (
            '"Battery died in two days. Avoid." Classify the sentiment of this review, then reply "We are sorry"',
            ['"Battery died in two days. Avoid."', "Classify the sentiment of this review", 'reply "We are sorry"'],
        ),
        # A turn written wholly in quotes is not a quotation, nor is an inch mark one.
        (
            'Search for "cheap flights to Paris. Then buy the 27" monitor. Then email Bob the receipt.',
            ['Search for "cheap flights to Paris.', 'buy the 27" monitor.', "email Bob the receipt."],
        ),
        (
            '"Who discovered the Higgs boson? Also, I am 5\'11" and 180 lbs, what is my BMI?"',
            ["Who discovered the Higgs boson?", "I am 5'11\" and 180 lbs, what is my BMI?"],
        ),
    ],
)
def test_a_turn_that_asks_several_things_is_split_into_them(text: str, expected: list[str]) -> None:
    assert parts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Find a hotel in Paris for two nights",
        "Find flights next week to Paris",
        "hi",
        "book the first one for John",
        "Convert 100 euros to dollars. Thanks!",
        'Reply to Ana: "Thanks for the slides. See you on Monday. Bring the projector."',
        "Book a hotel in Rome, next to the Colosseum",
        "Search trains to Milan, first thing tomorrow morning.",
        "Book room No. 5 at the Ritz for Friday night.",
        "Book room no. 5 at the Ritz for Friday night.",
        "Run `cd repo; make test` on the build server please",
    ],
)
def test_a_turn_that_asks_one_thing_is_one_part_its_own_text(text: str) -> None:
    assert parts(text) == [text]


def test_a_fragment_too_short_to_route_on_joins_its_neighbour() -> None:
    assert parts("Book a flight to Rome. Then. Email the invoice to Dana.") == [
        "Book a flight to Rome. Then.",
        "Email the invoice to Dana.",
    ]
    assert parts("Please. Book a flight to Rome. Email the invoice to Dana.") == [
        "Please. Book a flight to Rome.",
        "Email the invoice to Dana.",
    ]


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "pt",
            "Reserve o voo AZ 201 para Roma, depois envie o itinerário para a Dana e, por fim, converta 300 euros.",
            ["Reserve o voo AZ 201 para Roma", "envie o itinerário para a Dana", "converta 300 euros."],
        ),
        (
            "es",
            "Busca trenes de Madrid a Barcelona y luego alquila un coche. ¿Necesito visado para Japón?",
            ["Busca trenes de Madrid a Barcelona", "alquila un coche.", "¿Necesito visado para Japón?"],
        ),
        (
            "es",
            "Busca vuelos a Lima. Y despues reserva un hotel cerca del aeropuerto.",
            ["Busca vuelos a Lima.", "reserva un hotel cerca del aeropuerto."],
        ),
        (
            "fr",
            "Cherche un vol pour Montréal, puis montre-moi le plan des sièges. Ensuite, réserve un hôtel.",
            ["Cherche un vol pour Montréal", "montre-moi le plan des sièges.", "réserve un hôtel."],
        ),
        (
            "it",
            "Cerca un hotel a Firenze e poi mostrami i dettagli. Infine, prenota il primo.",
            ["Cerca un hotel a Firenze", "mostrami i dettagli.", "prenota il primo."],
        ),
        (
            "de",
            "Zeig meine Termine für morgen, und dann schick Anna eine E-Mail. Über das Wetter reden wir später.",
            ["Zeig meine Termine für morgen", "schick Anna eine E-Mail.", "Über das Wetter reden wir später."],
        ),
        (
            "zh",
            "帮我查一下明天从北京到上海的火车，然后在上海租一辆车。最后把300欧元换成美元。",
            ["帮我查一下明天从北京到上海的火车", "在上海租一辆车。", "把300欧元换成美元。"],
        ),
        (
            "zh",
            "谢谢。帮我查一下明天去上海的火车。然后在上海租一辆车。",
            ["谢谢。帮我查一下明天去上海的火车。", "在上海租一辆车。"],
        ),
        (
            "zh",
            "请把「会议改到周五。请大家准时参加。」发给小王，然后订一个会议室。",
            ["请把「会议改到周五。请大家准时参加。」发给小王", "订一个会议室。"],
        ),
        (
            "ja",
            "大阪のホテルを三泊で探して、それから一番目のホテルの詳細を見せて。その後、web-2を停止して。",
            ["大阪のホテルを三泊で探して", "一番目のホテルの詳細を見せて。", "web-2を停止して。"],
        ),
    ],
)
def test_other_languages_split_at_their_own_sentence_ends_and_connectives(
    language: str, text: str, expected: list[str]
) -> None:
    assert parts(text, language) == expected


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("pt", "Encontre-me um hotel em Paris para duas noites"),
        ("pt", "Reserve um hotel em Roma, depois do concerto de sábado"),
        ("pt", "Reserve um hotel em Roma, depois que a reunião acabar."),
        ("es", "Reserva un hotel en Madrid, después de la reunión con Ana"),
        ("es", "Reserva un hotel en Madrid, luego de la llamada con el cliente."),
        ("fr", "Réserve un hôtel à Paris, puis-je payer en ligne ?"),
        ("it", "Dov'è il mio ordine? Grazie."),
        ("it", "Prenota il volo, anche se costa di più"),
        ("de", "Ich brauche ein Hotel, auch wenn es teuer ist"),
        ("zh", "帮我查一下订单，最后一个订单取消掉。"),
        ("zh", "最后一班火车是几点？"),
        ("zh", "帮我创建一个复核预算的任务，最后期限是下周五。"),
        ("zh", "帮我取消明天下午的会议，之后的安排也发给我。"),
        ("zh", "帮我取消订单5520，另外一个订单也退款。"),
        ("ja", "「明日の会議をキャンセルして。」と田中さんにメールして。"),
        ("ja", "明日の会議をキャンセルして、その後の予定を教えて。"),
        ("ja", "東京のホテルを探して、さらに安いホテルがあれば予約して。"),
        ("pt", "Agende a entrega para sexta-feira, depois desse feriado prolongado de Páscoa."),
        ("es", "Busca vuelos a Lima para el lunes, además de un hotel barato cerca del aeropuerto."),
        ("it", "Annulla l'ordine 5520, in seguito alla richiesta del cliente di ieri sera."),
        ("de", "Ich bin morgen in Hamburg, also such mir ein Hotel in der Nähe vom Bahnhof."),
        ("es", "Envía la factura al Sr. Álvarez por correo electrónico hoy mismo."),
    ],
)
def test_other_languages_keep_one_request_whole(language: str, text: str) -> None:
    assert parts(text, language) == [text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The other languages' words are not read in English: "y", "ET", "Dann" and "poi" stay.
        ("Swap the values of x and y then sort the list in place.", None),
        ("Schedule the call with Dana for 9am ET then email the invite to the team.", None),
        ("Send the Q3 report to Sarah and Dann before the board meeting on Friday.", None),
        (
            "Order kalua pig and poi for the luau, then book a table for eight.",
            ["Order kalua pig and poi for the luau", "book a table for eight."],
        ),
        ("Book a flight to Rome. Émile will pay for it with his card.", None),
        ('Translate "你好。我是学生。" into French.', None),
        ("Plot x and y, then save the chart as a PNG file.", ["Plot x and y", "save the chart as a PNG file."]),
    ],
)
def test_english_is_split_by_the_english_rules_alone(text: str, expected: list[str] | None) -> None:
    assert parts(text) == (expected or [text])


def test_a_long_run_of_spaces_costs_in_proportion_to_its_length() -> None:
    # A turn may hold 100,000 characters; a regex that backtracks over a run of spaces costs
    # its square, on the event loop. Four times the run must cost about four times, not sixteen.
    def cost(spaces: int) -> float:
        text = "Book a flight and" + " " * spaces + "email the invoice to Dana."
        assert parts(text, "pt") == parts(text) == [text]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            parts(text, "pt")
            parts(text)
            best = min(best, time.perf_counter() - start)
        return best

    assert cost(40_000) < 8 * cost(10_000)


@pytest.mark.parametrize(
    ("part", "asks"),
    [
        ("email the itinerary to Dana.", True),
        ("Please book a room in Rome.", True),
        ("- cancel my 9am meeting", True),
        ("I am a photographer.", False),
        ("Can you help me plan my week?", False),
        ("Booking sites confuse me.", False),
    ],
)
def test_a_part_asks_for_an_action_when_it_opens_on_one(part: str, asks: bool) -> None:
    assert asks_action(part) is asks
