from pathlib import Path

from kgroups.config.broker_settings import SETTINGS

DOC = Path(__file__).parents[3] / "docs" / "configuration.md"


def test_every_setting_is_documented() -> None:
    text = DOC.read_text()
    missing = [key for key in SETTINGS if f"`{key}`" not in text]
    assert missing == []
