"""How a model forgets: a window of the latest events, or an exponential decay.

Pass one as ``forgetting=`` to any model (default None: every event counts
forever). A ``drift_detector`` may be added to either, or given alone (see
:mod:`stream_nb.learners._forgetting` for what each does to the counts).

>>> from stream_nb import NaiveBayes, Window, Decay
>>> NaiveBayes(forgetting=Window(10_000, panes=4)).forgetting
Window(size=10000)
>>> Decay(half_life=60, time_field="ts")
Decay(half_life=60, time_field='ts')
>>> Window(3, panes=4)
Traceback (most recent call last):
...
stream_nb.exceptions.ConfigError: Window(panes=...): expected at most size=3 panes, got 4
"""

from __future__ import annotations

from ..exceptions import ConfigError
from ._declare import REQUIRED, Option, Param, option

__all__ = ["Decay", "Window"]


@option(
    Param("size", "int", REQUIRED, "forget by a window: the counts cover the last N learned events (between "
          "N - N/panes and N), older panes subtracted exactly", minimum=1, setting="window", metavar="N"),
    Param("panes", "int", 4, "panes of the window; memory is the counts times panes + 1 at most", minimum=1,
          metavar="P"),
)
class Window(Option):
    """Forget by a window: the counts cover the last ``size`` learned events, in ``panes`` panes.

    Learned events are grouped in panes of ``ceil(size / panes)``; when a pane is complete the
    oldest is subtracted exactly, so the counts cover between ``size - size/panes`` and ``size``
    events. Memory: the counts times ``panes + 1`` at most.

    Parameters
    ----------
    size
        Events the window holds, >= 1.
    panes
        Panes it is cut into, from 1 to ``size``.

    Examples
    --------
    >>> from stream_nb import NaiveBayes, Window
    >>> model = NaiveBayes(forgetting=Window(4, panes=2))
    >>> for y in ["a"] * 10 + ["b"] * 4:
    ...     model.learn_one({"x": "1"}, y)
    >>> model.predict_one({"x": "1"}), model.n_learned   # 14 events: the last complete pane of 2
    ('b', 2.0)
    """

    def _check_together(self) -> None:
        if self.panes > self.size:
            raise ConfigError(f"Window(panes=...): expected at most size={self.size} panes, got {self.panes}")


@option(
    Param("half_life", "float", REQUIRED, "forget by decay: every count halves every H learned events "
          "(with --time-field: every H seconds of event time)", minimum=0, strict=True, metavar="H"),
    Param("time_field", "str", None, "the event's field holding its time, a number (not a feature): decay "
          "in event time", optional=True, metavar="FIELD"),
)
class Decay(Option):
    """Forget by exponential decay: an event's weight halves every ``half_life`` learned events.

    With ``time_field``, ``half_life`` is in the units of each event's number ``x[time_field]``
    (seconds in the daemon), which is not a feature; an event older than the model's clock is
    learned at the clock.

    Parameters
    ----------
    half_life
        Events (or units of event time) in which a count halves, > 0.
    time_field
        The field holding the event's time (None: decay per learned event).

    Examples
    --------
    >>> from stream_nb import NaiveBayes, Decay
    >>> model = NaiveBayes(forgetting=Decay(half_life=1))
    >>> for y in ["a", "a", "a", "b"]:
    ...     model.learn_one({"x": "1"}, y)
    >>> model.n_learned   # 1/8 + 1/4 + 1/2 + 1
    1.875
    """


def window_or_decay(values: dict) -> Window | Decay | None:
    """The forgetting the flat settings ``window``, ``panes``, ``half_life`` and ``time_field`` describe
    (the ones given are in ``values``); errors name the setting, as ``stream-nb run`` shows it.

    >>> window_or_decay({"window": 100, "panes": 5})
    Window(size=100, panes=5)
    >>> window_or_decay({"window": 100, "half_life": 5.0})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: half_life: a model forgets by a window or by decay, not both; got window=100 and half_life=5.0
    """
    window, half_life = values.get("window"), values.get("half_life")
    panes = values.get("panes")
    panes = 4 if panes is None else Window.PARAMS[1].check(panes, None)
    if window is not None:
        window = Window.PARAMS[0].check(window, None)
        if panes > window:
            raise ConfigError(f"panes: expected at most window={window} panes, got {panes}")
    if half_life is not None:
        half_life = Decay.PARAMS[0].check(half_life, None)
        if window is not None:
            raise ConfigError("half_life: a model forgets by a window or by decay, not both; "
                              f"got window={window} and half_life={half_life}")
        return Decay(half_life, Decay.PARAMS[1].check(values.get("time_field"), None))
    return None if window is None else Window(window, panes)
