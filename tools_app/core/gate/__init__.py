"""Gate mode: the proof a command must pass to run unseen on an agent's own machine."""

from __future__ import annotations

from tools_app.core.gate.proof import Fence, Proof, any_case, anywhere, fold, prove_command

__all__ = ["Fence", "Proof", "any_case", "anywhere", "fold", "prove_command"]
