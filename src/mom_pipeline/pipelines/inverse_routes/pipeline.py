"""inverse_routes: network + routes.csv + features.csv -> validated routes -> lambda -> RouteMOM ->
coefficients by arc or attribute, route agreement, routes for new contexts; and the example."""

from kedro.pipeline import Node, Pipeline

from .nodes import (coefficients_table, compare_new_routes, load_network, make_example, route_new_contexts,
                    train_route_model, training_report, tune_lambda, validate_routes)

PARAMS = "params:inverse_routes"


def _fit_nodes() -> list[Node]:
    return [
        Node(validate_routes, ["network", "routes", "features", PARAMS], ["problem", "rejections"],
             name="validate_routes"),
        Node(tune_lambda, ["problem", PARAMS], ["lambda_validation", "lambda_validation_figure"], name="tune_lambda"),
        Node(train_route_model, ["problem", "lambda_validation", PARAMS], "model", name="train_route_model"),
        Node(coefficients_table, ["model", "problem"], "theta", name="coefficients_table"),
        Node(training_report, ["model", "problem", "lambda_validation"], ["training_routes", "route_agreement"],
             name="training_report"),
        Node(route_new_contexts, ["model", "network", "new_contexts", PARAMS], "new_routes", name="route_new_contexts"),
    ]


def create_pipeline(namespace: str = "inverse_routes", **kwargs) -> Pipeline:
    """The user's data: the network file of ``inverse_routes.network_file`` and the tables in data/01_raw/<namespace>/."""
    return Pipeline([Node(load_network, PARAMS, "network", name="load_network"), *_fit_nodes()],
                    namespace=namespace, parameters={PARAMS: PARAMS})


def example_pipeline(namespace: str = "inverse_routes_example", **kwargs) -> Pipeline:
    """Generated routes (``inverse_routes_example``), then the same fit with ``inverse_routes_example_fit``."""
    example = f"params:{namespace}"
    return Pipeline([
        Node(make_example, example, ["network", "arcs", "features", "routes", "new_contexts", "true_new_routes"],
             name="make_example"),
        *_fit_nodes(),
        Node(compare_new_routes, ["new_routes", "true_new_routes"], "new_route_agreement", name="compare_new_routes"),
    ], namespace=namespace, parameters={example: example, PARAMS: f"{example}_fit"})
