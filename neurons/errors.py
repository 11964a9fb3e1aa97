"""Errors of the composition root: every public exception in neurons/ derives from ``NeuronError``.

They are our own faults (raised, logged, retried at the job boundary) or a command's refusal of
its input; a miner's faults are data, never these. Each is defined next to the code that raises
it, which is where callers import it from; the tree (``tests/neurons/test_errors.py`` keeps it
complete):

NeuronError
├── ChainUnavailable   a chain call timed out, lost its connection or could not be decoded;
│                      the job that made it logs, counts, and retries on its next tick
├── LocalChainError    the local chain file is missing, of another subnet, or asked for
│                      something the local chain does not model
├── EndpointRefused    the chain refused to serve the miner's endpoint, or there is no IP to serve
├── DeadlinePassed     a miner query waited for a connection slot past its deadline and was
│                      never sent (validator overload: not the miner's fault)
├── AuthFailure        chain/chaintypes.py: a signed request refused (``reason``, safe to return)
├── Refused            chain/local/rules.py: a call the local chain rejects, as subtensor would
├── StartupError       validator/startup.py: the validator cannot start with these settings
├── TaskAuditFailed    validator/taskpool.py: new tasks would leak across pools; none stored
├── AgentError         miner/agents/contract.py: an agent spec cannot be loaded or built
├── MetagraphUnusable  miner/metagraph.py: no metagraph snapshot young enough to admit callers
├── SelectionError     evaluation/selection.py: eval tasks or a manifest cannot be used
├── RunMismatch        evaluation/settings.py: a run directory holds samples of other settings
├── ModelUnavailable   evaluation/runner.py: the evaluated model's server is down or misnamed
├── LocalLLMError      demo/local_llm.py: the local model is missing or its server did not start
├── LearnError         learning/pipeline.py: a step of `make learn` failed (which, and its stderr)
├── EnvError           environment/errors.py: the RL environment refuses a request (an agent's
│   │                  faults are tool errors in its observation, never these)
│   ├── UnknownTask      a reset names a task the environment does not hold
│   ├── UnknownSession   a step names a session not open here
│   ├── EnvFull          a reset beyond the bound on open sessions
│   └── RolloutMismatch  environment/rollouts.py: a run directory of another policy, weights or k
├── DemoError          demo/network.py: the demo cannot go on
│   └── DemoInputError   bad input: a work dir that is not fresh, an endpoint that does not answer
└── UnusableInput      cli/judge.py: an input file of `arena judge` cannot be used

A chain *refusal* (rate limit, not registered, too few weights) is not an exception: it is a
``Submission``/``WeightSubmission`` with ``success=False`` and a reason code.
"""

from __future__ import annotations


class NeuronError(Exception):
    """Base of every error raised by the neurons package."""


class ChainUnavailable(NeuronError):
    """A chain call failed for a reason outside the chain's own rules (timeout, transport, decode).

    Attributes:
        call: the chain operation that failed (``metagraph``, ``block``, ``set_weights``, ``serve``).
        kind: a short failure class (``timeout``, ``connection``, ``chain``, ``local``, ``missing``).
    """

    def __init__(self, call: str, kind: str, message: str) -> None:
        super().__init__(f"{call} failed ({kind}): {message}")
        self.call = call
        self.kind = kind


class LocalChainError(NeuronError):
    """The local chain file is missing or invalid, or a request is outside what it models."""


class EndpointRefused(NeuronError):
    """The chain refused to serve the miner's endpoint (not registered, rate limited), or it has no IP."""


class DeadlinePassed(NeuronError):
    """A miner query was never sent: its deadline passed while it waited for a connection slot.

    The validator was overloaded (more queries than ``max_concurrency`` allows in the time given);
    this is our fault, not the miner's, so it must not be scored as the miner's timeout.
    """
