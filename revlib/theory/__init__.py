"""Closed forms that the derivations predict, next to the code that measures them."""
