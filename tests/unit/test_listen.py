"""The API's sockets are bound and listening before anything slow starts."""

from __future__ import annotations

import pytest

from router.server.listen import ListenError, bind


def test_an_address_is_held_from_the_moment_it_is_bound() -> None:
    # Bound without listening, a socket with SO_REUSEADDR lets another process bind the same port.
    first = bind("127.0.0.1", 0)
    try:
        port = first[0].getsockname()[1]
        with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port}: Address already in use"):
            bind("127.0.0.1", port)
    finally:
        for sock in first:
            sock.close()


def test_an_empty_host_is_every_interface_and_a_bad_one_is_an_argument_error() -> None:
    every = bind("", 0)
    try:
        assert "0.0.0.0" in {sock.getsockname()[0] for sock in every}  # noqa: S104 - what an empty host means
    finally:
        for sock in every:
            sock.close()
    with pytest.raises(ListenError) as caught:
        bind("no-such-host.invalid", 0)
    assert caught.value.argument
