"""A target type of your own: `register_renderer` (see conftest.py) turns it into text."""


def test_orders_mention_espresso(order_log, assert_proposition):
    assert_proposition(order_log, "Someone ordered an espresso.")
