"""The arena as an RL environment: sessions with turn rewards, the HTTP and OpenEnv servers, TRL, rollouts."""
