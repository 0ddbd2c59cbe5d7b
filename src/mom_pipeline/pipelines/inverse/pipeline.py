"""inverse: tables in data/01_raw/<namespace>/ -> validated problem -> MOM -> Theta, prescriptions."""

from kedro.pipeline import Node, Pipeline

from .nodes import (
    coefficients_table,
    make_example,
    prescribe_new,
    train_inverse_model,
    training_report,
    tune_lambda,
    validate_inputs,
)

SHARED_PARAMS = {"params:inverse": "params:inverse"}


def create_pipeline(namespace: str = "inverse", **kwargs) -> Pipeline:
    return Pipeline([
        Node(validate_inputs, ["features", "decisions", "constraints", "rhs", "bounds", "params:inverse"],
             ["problem", "rejections"], name="validate_inputs"),
        Node(tune_lambda, ["problem", "params:inverse"], ["lambda_validation", "lambda_validation_figure"],
             name="tune_lambda"),
        Node(train_inverse_model, ["problem", "lambda_validation", "params:inverse"], "model",
             name="train_inverse_model"),
        Node(coefficients_table, ["model", "problem"], "theta", name="coefficients_table"),
        Node(training_report, ["model", "problem"], ["training_prescriptions", "recovery"], name="training_report"),
    ], namespace=namespace, parameters=SHARED_PARAMS)


def prescribe_pipeline(namespace: str = "inverse", **kwargs) -> Pipeline:
    return Pipeline([
        Node(prescribe_new, ["model", "new_contexts", "constraints", "rhs", "bounds", "problem", "params:inverse"],
             ["prescriptions", "prescription_failures"], name="prescribe_new"),
    ], namespace=namespace, parameters=SHARED_PARAMS)


def example_pipeline(namespace: str = "inverse_example", **kwargs) -> Pipeline:
    """Generate the example tables, then run the inverse and prescribe pipelines on them."""
    generate = Pipeline([
        Node(make_example, "params:inverse_example",
             ["features", "decisions", "constraints", "rhs", "bounds", "new_contexts", "new_travel_times"],
             name="make_example"),
    ], namespace=namespace, parameters={"params:inverse_example": "params:inverse_example"})
    return generate + create_pipeline(namespace) + prescribe_pipeline(namespace)
