"""What the answerer's model may say. The verifier re-checks every sentence."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CitedSentence(BaseModel):
    """One statement of the answer: the message ids it rests on, words copied exactly
    from one of them, and the statement itself."""

    model_config = ConfigDict(extra="forbid")

    # Field order is generation order: pick the source, copy from it, then state.
    citations: list[str] = Field(min_length=1, max_length=4)
    quote: str = Field(max_length=300, description="Exact words copied from a cited message, or empty.")
    text: str = Field(min_length=1, max_length=600)

    def sentence(self) -> str:
        """The statement with its quote, as the verifier will check it."""
        quote = self.quote.strip().strip('"“”').strip()
        if not quote:
            return self.text
        return f'{self.text.rstrip().rstrip(".")}: "{quote}".'



class AnswerDraft(BaseModel):
    """The answer as cited sentences; empty when the evidence does not answer."""

    model_config = ConfigDict(extra="forbid")

    sentences: list[CitedSentence] = Field(default_factory=list, max_length=6)
