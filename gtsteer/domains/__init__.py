"""Domain code that YAML cannot say: exact utilities and structured private information.

Importing this package registers every built-in domain with gtsteer.binding.
"""

from gtsteer.domains import fruit_trade, fruit_trade_cases

__all__ = ["fruit_trade", "fruit_trade_cases"]
