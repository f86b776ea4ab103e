"""Claims about an LLM app's chat transcript (OpenAI message format, tool calls included)."""


def test_assistant_used_the_weather_tool(transcript, assert_proposition):
    assert_proposition(transcript, "The assistant calls a weather tool for Lisbon.")


def test_answer_is_grounded_in_the_tool_result(transcript, min_score):
    min_score(
        transcript,
        "The assistant's final answer matches the forecast the tool returned.",
        5,
    )
