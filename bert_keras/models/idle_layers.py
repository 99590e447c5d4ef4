"""`IdleLayers`: a Keras model mixin that leaves out of training the layers its loss never
reads, such as the pooler of an encoder whose heads read only the sequence output. Keras
would otherwise warn "Gradients do not exist ... did you forget to provide a `loss`?" on
every step and keep optimizer slots for them. The layers themselves are not changed: a
shared encoder still trains its pooler in a model that reads it."""


class IdleLayers:
    """Mixin for `keras.Model` subclasses (before `keras.Model` in the bases): the weights of
    `idle_layers()` count as non-trainable in this model only.

    Example:
    >>> import keras
    >>> class Model(IdleLayers, keras.Model):
    ...     def idle_layers(self):
    ...         return [self.unread]
    >>> inputs = keras.Input((3,))
    >>> model = Model(inputs, keras.layers.Dense(2)(inputs))
    >>> model.unread = keras.layers.Dense(2)
    >>> model.unread.build((None, 3))
    >>> len(model.trainable_weights), len(model.non_trainable_weights)
    (2, 2)
    """

    def idle_layers(self):
        """The layers whose weights this model's loss never reads (None entries allowed)."""
        return []

    def _idle_weights(self):
        if not self.trainable:
            return []
        return [w for layer in self.idle_layers() if layer for w in layer.trainable_weights]

    @property
    def trainable_weights(self):
        idle = {id(w) for w in self._idle_weights()}
        return [w for w in super().trainable_weights if id(w) not in idle]

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_weights(self):
        return super().non_trainable_weights + self._idle_weights()

    @property
    def non_trainable_variables(self):
        return super().non_trainable_variables + self._idle_weights()
