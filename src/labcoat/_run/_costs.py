"""Model prices for cost limits: fail closed when a price is unknown."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.model import ModelCost, ModelInfo, get_model_info, set_model_cost, set_model_info
from pydantic import BaseModel, ConfigDict, Field

from labcoat._errors import LabcoatError
from labcoat._util.yaml_file import read_yaml, validate_model


class Price(BaseModel):
    """$ per million tokens. Cache prices default to the input price (never cheaper)."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    input_cache_write: float | None = Field(default=None, ge=0)
    input_cache_read: float | None = Field(default=None, ge=0)

    def to_model_cost(self) -> ModelCost:
        return ModelCost(
            input=self.input,
            output=self.output,
            input_cache_write=self.input
            if self.input_cache_write is None
            else self.input_cache_write,
            input_cache_read=self.input if self.input_cache_read is None else self.input_cache_read,
        )


def load_prices(path: str | Path) -> dict[str, ModelCost]:
    """A YAML/JSON mapping `model: {input, output[, input_cache_write, input_cache_read]}`."""
    data = read_yaml(Path(path))
    if not isinstance(data, dict):
        raise LabcoatError(f"{path}: expected a mapping of model names to prices")
    return {
        str(name): validate_model(Price, price, Path(path), str(name)).to_model_cost()
        for name, price in data.items()
    }


def register_prices(prices: dict[str, ModelCost]) -> None:
    """Make the prices known to Inspect, also for models its database lacks (local ones)."""
    for model, cost in prices.items():
        if get_model_info(model) is None:
            set_model_info(model, ModelInfo(cost=cost))
        else:
            set_model_cost(model, cost)


def require_price(model: str, prices: dict[str, ModelCost], option: str = "--cost-limit") -> None:
    """Refuse to start a cost-limited (or dollar-budgeted) run whose model has no known
    price."""
    if model in prices:
        return
    info = get_model_info(model)
    if info is not None and info.cost is not None:
        return
    raise LabcoatError(
        f"{option} needs the price of {model}, which labcoat does not know. Give it with "
        f"--model-cost-config FILE, a YAML file like:\n  {model}: {{input: 3.0, output: 15.0}}  "
        "# $ per million tokens"
    )
