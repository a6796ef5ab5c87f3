"""Studies over a scenario: the QPS x k sweep (cells run locally or in processes) and the decisions drawn from it
(best k per QPS, the crossover). The simulator below knows requests, an engine config and predictors; this
package knows scenarios."""
