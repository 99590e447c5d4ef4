"""`build_before_fit`: a model's optimizer slots made before `fit` traces its first step."""

import keras


def build_before_fit(model):
    """Builds `model`'s optimizer for its trainable variables where the model is built and its
    optimizer is not, in the model's strategy scope (a model compiled in a strategy's scope
    may be fit outside it, as Keras allows: its slots are mirrored too). Without a strategy
    Keras builds the optimizer inside the first trace of the train step, and tf.function then
    traces the whole step a second time (one without variable creation): ~1.5 s of a small
    model's first `fit` with Keras' own optimizers (ours make their slots outside the trace
    themselves).

    Example:
    >>> import keras
    >>> inputs = keras.Input((3,))
    >>> model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    >>> model.compile(optimizer="adam", loss="mse")
    >>> build_before_fit(model)
    >>> model.optimizer.built
    True
    """
    optimizer = getattr(model, "optimizer", None)
    if model.built and isinstance(optimizer, keras.optimizers.Optimizer) and not optimizer.built:
        with model.distribute_strategy.scope():
            optimizer.build(model.trainable_variables)
