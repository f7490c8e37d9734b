"""OP001: this Program does not parse."""

from openprogram import Agent


class Broken(Agent:
    pass
