"""The reference agents and their contract.

``contract`` (what an agent receives and returns), ``loading`` (an agent by name), and the two
reference agents ``llm`` (a model picks each call) and ``scripted`` (Python picks each call).
"""
