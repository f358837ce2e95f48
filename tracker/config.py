"""Game config: the table, the sides, the tokens and the terrain library, in inches.

The format is the ``setup.json`` of the shared evaluation sets (so those files load as
they are), written as YAML or JSON. Every field is checked on load; a misspelt key is an
error that names the key, where it is, and the nearest valid spelling.

>>> cfg = GameConfig.from_dict({"kind": "warcry", "sides": [
...     {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200]},
...     {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]})
>>> cfg.table.play_area_in, [s.colour for s in cfg.sides]
((30.0, 22.0), ['red', 'blue'])
>>> GameConfig.from_dict({"kind": "warcry", "sidez": []})
Traceback (most recent call last):
...
tracker.errors.ConfigError: config: unknown key 'sidez' (did you mean 'sides'?)
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .inputs import MAX_DEPTH, depth, load_yaml

WARCRY_PLAY_AREA_IN = (30.0, 22.0)
EPIC_PLAY_AREA_IN = (180 / 2.54, 120 / 2.54)
RIM_STYLES = ("ring", "painted_edge")
TERRAIN_TYPES = (
    "obstacle", "platform", "low", "deadly", "unscalable", "stairs", "ladder", "door", "archway",
)
CONFIG_FILES = ("game.yaml", "game.yml", "game.json", "setup.json")  # a footage folder's game config, first found


@dataclass(frozen=True)
class TableMarker:
    id: int
    centre_in: tuple[float, float]
    size_in: float = 2.0

    def corners_in(self) -> list[tuple[float, float, float]]:
        """World corners in OpenCV's order (TL, TR, BR, BL of the marker image); the
        marker's top edge faces +y (physical spec)."""
        cx, cy = self.centre_in
        h = self.size_in / 2
        return [(cx - h, cy + h, 0.0), (cx + h, cy + h, 0.0), (cx + h, cy - h, 0.0), (cx - h, cy - h, 0.0)]


@dataclass(frozen=True)
class Table:
    play_area_in: tuple[float, float]
    markers: tuple[TableMarker, ...]
    dictionary: str = "DICT_4X4_100"


BASE_SHAPES = ("round", "oval", "rect")
# The physical spec's oval sizes (mm); other ovals are accepted (Epic and older kits vary).
SPEC_OVALS_MM = ((60, 35), (75, 42), (90, 52), (105, 70), (120, 92), (170, 105))


@dataclass(frozen=True)
class BaseSize:
    """A non-round base: ``shape`` "oval" or "rect", ``width_mm`` >= ``depth_mm``
    (width along the base's own long axis)."""

    shape: str
    width_mm: float
    depth_mm: float


@dataclass(frozen=True)
class Side:
    """``bases_mm``: the round bases' diameters, one per fighter of the side (its roster:
    a whole look holds the bases it finds against it); ``shaped``: the side's oval and
    rectangular bases. In the config both are one ``bases_mm`` list: a number is a
    round base, ``{shape: oval, mm: [60, 35]}`` / ``{shape: rect, mm: [40, 20]}`` a
    shaped one."""

    index: int
    colour: str
    rim_bgr: tuple[int, int, int]
    bases_mm: tuple[float, ...] = ()
    shaped: tuple[BaseSize, ...] = ()
    # The shaped bases one per fighter, as listed (``shaped`` holds each size once).
    shaped_roster: tuple[BaseSize, ...] = ()
    # The physical spec's "painted edge or coloured ring": ``painted_edge``, the base's
    # side wall carries the colour too, and a base off the camera's nadir shows it on the
    # side facing the camera (the tracker then reads that edge as the wall's foot);
    # ``ring``, only the top face does.
    rim_style: str = "ring"


@dataclass(frozen=True)
class TokenStyle:
    """One colour an untagged token of a kind may have on this table (``untagged_token_styles``)."""

    name: str
    bgr: tuple[int, int, int]


@dataclass(frozen=True)
class TokenSpec:
    """``untagged_styles``: the colours of this kind's untagged discs; empty means the
    physical spec's defaults (a gold treasure, a white or black objective)."""

    diameter_in: float = 1.0
    tag_ids: tuple[int, ...] = ()
    untagged: int = 0
    untagged_styles: tuple[TokenStyle, ...] = ()


STATE_TAG_IDS = range(80, 100)  # physical spec: DICT_4X4_100 ids 80-99 are state tokens
STATE_MEANINGS = ("activated", "half-activated", "damage")


@dataclass(frozen=True)
class StateTokenSpec:
    """What one state-token tag means: ``activated``, ``half-activated`` or ``damage``
    (``count`` damage points: a "3 damage" token says 3)."""

    tag_id: int
    meaning: str
    count: int = 1


@dataclass(frozen=True)
class StateTokens:
    """The optional ``state_tokens:`` section: tagged tokens laid beside a base, read
    from the video and attached to the nearest fighter (absent: recognition off)."""

    tags: dict[int, StateTokenSpec]
    diameter_in: float = 1.0
    reach_in: float = 1.0

    def meaning(self, tag_id: int) -> StateTokenSpec | None:
        return self.tags.get(int(tag_id))


@dataclass(frozen=True)
class TerrainSpec:
    tag_id: int
    type: str
    height_in: float
    footprint_in_tag_frame: tuple[tuple[float, float], ...]
    tag_size_in: float = 1.0


@dataclass(frozen=True)
class CalibrationBoard:
    type: str = "charuco"
    squares: tuple[int, int] = (7, 5)
    square_in: float = 1.25
    marker_in: float = 0.9
    dictionary: str = "DICT_5X5_100"
    margin_in: float = 0.5  # white paper round the squares: the outline a too-small board is found by


@dataclass(frozen=True)
class GameConfig:
    kind: str
    table: Table
    sides: tuple[Side, ...]
    tokens: dict[str, TokenSpec]
    terrain_library: tuple[TerrainSpec, ...] = ()
    calibration_board: CalibrationBoard = CalibrationBoard()
    base_thickness_in: float = 4.0 / 25.4
    image_size: tuple[int, int] | None = None
    epic: Any = None  # tracker.epic.EpicConfig from the optional ``epic:`` section
    state_tokens: StateTokens | None = None  # optional ``state_tokens:`` section (None: recognition off)
    source_path: Path | None = field(default=None, compare=False)

    def side(self, index: int) -> Side:
        for s in self.sides:
            if s.index == index:
                return s
        raise KeyError(index)

    def terrain_spec(self, tag_id: int) -> TerrainSpec | None:
        return next((t for t in self.terrain_library if t.tag_id == tag_id), None)

    def token_kind_for_tag(self, tag_id: int) -> str | None:
        for kind, spec in self.tokens.items():
            if tag_id in spec.tag_ids:
                return kind
        return None

    @property
    def base_diameters_mm(self) -> tuple[float, ...]:
        return tuple(sorted({d for s in self.sides for d in s.bases_mm}))

    @classmethod
    def load(cls, path: str | Path) -> "GameConfig":
        p = Path(path)
        if p.is_dir():
            for name in CONFIG_FILES:
                if (p / name).exists():
                    p = p / name
                    break
            else:
                raise ConfigError(f"{path}: no game.yaml or setup.json in this folder; pass the config file with --game")
        if not p.exists():
            raise ConfigError(f"{p}: config file not found; check the path given to --game")
        try:
            text = p.read_text()
            data = json.loads(text) if p.suffix == ".json" else load_yaml(text, str(p))  # (YAML: no aliases)
        except RecursionError:  # (JSON nested 100,000 deep; load_yaml bounds YAML itself)
            raise ConfigError(f"{p}: nested more than {MAX_DEPTH} levels deep; no game config nests so deep") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{p}: cannot read config ({e.__class__.__name__}); is it a text file?") from None
        except (json.JSONDecodeError, yaml.YAMLError) as e:
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else (f" at line {e.lineno}" if hasattr(e, "lineno") else "")
            if "aliases and anchors" in str(getattr(e, "problem", None) or ""):
                raise ConfigError(f"{p}: YAML anchors and aliases (& and *) are not allowed{where}; "
                                  f"write each value out") from None
            raise ConfigError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}{where}; fix the syntax") from None
        if p.suffix == ".json" and depth(data) > MAX_DEPTH:  # (load_yaml bounds YAML itself)
            raise ConfigError(f"{p}: nested more than {MAX_DEPTH} levels deep; no game config nests so deep")
        try:
            cfg = cls.from_dict(data)
        except ConfigError as e:
            raise ConfigError(f"{p}: {e}") from None
        object.__setattr__(cfg, "source_path", p)
        return cfg

    @classmethod
    def from_dict(cls, d: Any) -> "GameConfig":
        r = _Reader(d, "config")
        # Keys the evaluation sets' setup.json carries that describe files, not the game.
        r.allow("about", "units", "token_colours", "frames", "calibration_views", "empty_table",
                "name", "video", "fps", "roster")
        # A misspelt key is the cause of whatever else looks wrong: report it first.
        r.expect("kind", "table", "sides", "tokens", "terrain_library", "calibration_board", "image",
                 "base_thickness_in", "epic", "state_tokens", "untagged_token_styles")
        kind = r.get("kind", str, "warcry")
        if kind not in ("warcry", "epic"):
            raise ConfigError(f"config.kind: '{kind}' is not a game this tracker knows; use 'warcry' or 'epic'")
        default_area = WARCRY_PLAY_AREA_IN if kind == "warcry" else EPIC_PLAY_AREA_IN

        t = r.sub("table", {})
        area = tuple(float(v) for v in t.get("play_area_in", list, list(default_area)))
        if len(area) != 2 or min(area) <= 0:
            raise ConfigError("config.table.play_area_in: give two positive numbers, width and depth in inches")
        W, D = area
        default_markers = [
            {"id": 0, "centre_in": [-1.5, -1.5]}, {"id": 1, "centre_in": [W + 1.5, -1.5]},
            {"id": 2, "centre_in": [W + 1.5, D + 1.5]}, {"id": 3, "centre_in": [-1.5, D + 1.5]},
        ]
        markers = []
        for i, m in enumerate(t.get("markers", list, default_markers)):
            mr = _Reader(m, f"config.table.markers[{i}]")
            markers.append(TableMarker(
                id=mr.get("id", int), centre_in=_pair(mr.get("centre_in", list), mr.where + ".centre_in"),
                size_in=mr.get("size_in", float, 2.0)))
            mr.done()
        table = Table(area, tuple(markers), t.get("dictionary", str, "DICT_4X4_100"))
        t.done()

        sides = []
        for i, s in enumerate(r.get("sides", list, [])):
            sr = _Reader(s, f"config.sides[{i}]")
            bgr = sr.get("rim_bgr", list)
            if len(bgr) != 3 or not all(0 <= int(c) <= 255 for c in bgr):
                raise ConfigError(f"{sr.where}.rim_bgr: give three numbers 0-255 (blue, green, red)")
            sr.allow("units")  # the eval sets' stand counts per unit: the epic section says it too
            listed = sr.get("bases_mm", list, [])
            if sr.get("bases", list, None) is not None:
                listed = _shaped_roster(sr.get("bases", list), sr.where + ".bases", len(listed))
                round_mm, shaped_roster = _bases(listed, sr.where + ".bases")
            else:
                round_mm, shaped_roster = _bases(listed, sr.where + ".bases_mm")
            shaped = tuple(dict.fromkeys(shaped_roster))
            style = sr.choice("rim_style", RIM_STYLES, "ring")
            sides.append(Side(index=sr.get("index", int, i), colour=sr.get("colour", str),
                              rim_bgr=tuple(int(c) for c in bgr), bases_mm=round_mm, shaped=shaped,
                              shaped_roster=shaped_roster,
                              rim_style=style))
            sr.done()
        if len(sides) < 2:
            raise ConfigError("config.sides: a game needs at least two sides, each with index, colour and rim_bgr")
        if len({s.index for s in sides}) != len(sides):
            raise ConfigError("config.sides: two sides share an index; give each side its own")

        tokens: dict[str, TokenSpec] = {}
        tr = r.sub("tokens", {})
        styles = _token_styles(r.sub("untagged_token_styles", None))
        for kind_name in ("objective", "treasure"):
            spec = tr.sub(kind_name, {})
            ids = spec.get("tag_ids", list, [])
            tokens[kind_name] = TokenSpec(
                diameter_in=spec.get("diameter_in", float, 1.0),
                tag_ids=tuple(int(x) for x in ids), untagged=spec.get("untagged", int, 0),
                untagged_styles=styles.get(kind_name, ()))
            spec.done()
        tr.done()

        terrain = []
        for i, p in enumerate(r.get("terrain_library", list, [])):
            pr = _Reader(p, f"config.terrain_library[{i}]")
            pr.allow("tag_lies_on")
            ttype = pr.get("type", str)
            if ttype not in TERRAIN_TYPES:
                raise ConfigError(f"{pr.where}.type: '{ttype}' is not a terrain type{_suggest(ttype, TERRAIN_TYPES)}; "
                                  f"use one of {', '.join(TERRAIN_TYPES)}")
            fp = pr.get("footprint_in_tag_frame", list)
            terrain.append(TerrainSpec(
                tag_id=pr.get("tag_id", int), type=ttype, height_in=pr.get("height_in", float),
                footprint_in_tag_frame=tuple(_pair(q, pr.where + ".footprint_in_tag_frame") for q in fp),
                tag_size_in=pr.get("tag_size_in", float, 1.0)))
            pr.done()

        b = r.sub("calibration_board", {})
        board = CalibrationBoard(
            type=b.get("type", str, "charuco"),
            squares=tuple(int(x) for x in b.get("squares", list, [7, 5])),
            square_in=b.get("square_in", float, 1.25), marker_in=b.get("marker_in", float, 0.9),
            dictionary=b.get("dictionary", str, "DICT_5X5_100"), margin_in=b.get("margin_in", float, 0.5))
        b.done()

        img = r.sub("image", None)
        image_size = None
        if img is not None:
            image_size = (img.get("width", int), img.get("height", int))
            img.done()
        epic_d = r.get("epic", dict, None)
        epic = None
        if epic_d is not None:
            from .epic import parse_epic_section
            epic = parse_epic_section(epic_d, "config.epic", play_area_in=area, sides=[s.index for s in sides])
        state_tokens = _state_tokens(r.sub("state_tokens", None), tokens)
        cfg = cls(kind=kind, table=table, sides=tuple(sides), tokens=tokens,
                  terrain_library=tuple(terrain), calibration_board=board,
                  base_thickness_in=r.get("base_thickness_in", float, 4.0 / 25.4), image_size=image_size,
                  epic=epic, state_tokens=state_tokens)
        r.done()
        return cfg


def _state_tokens(sr: "_Reader | None", tokens: dict[str, TokenSpec]) -> StateTokens | None:
    """The ``state_tokens:`` section::

        state_tokens:
          diameter_in: 1.0          # optional (default 1.0)
          tags:
            80: activated
            81: half-activated
            82: damage              # 1 damage point
            83: {meaning: damage, count: 3}
    """
    if sr is None:
        return None
    sr.expect("tags", "diameter_in", "reach_in")
    diameter = sr.get("diameter_in", float, 1.0)
    if not 0.3 <= diameter <= 2.0:
        raise ConfigError(f"{sr.where}.diameter_in: {diameter:g} in is not a token size; give the printed "
                          f"disc's diameter in inches (0.3 to 2)")
    reach = sr.get("reach_in", float, 1.0)
    if not 0 < reach <= 3.0:
        raise ConfigError(f"{sr.where}.reach_in: give how far from a base edge a token still belongs to it, "
                          f"in inches (above 0, at most 3)")
    raw = sr.get("tags", dict)
    if not raw:
        raise ConfigError(f"{sr.where}.tags: give at least one tag, e.g. '80: activated'")
    taken = {t: kind for kind, spec in tokens.items() for t in spec.tag_ids}
    tags: dict[int, StateTokenSpec] = {}
    for key, v in raw.items():
        at = f"{sr.where}.tags.{key}"
        try:
            tag = int(key)
        except (TypeError, ValueError):
            raise ConfigError(f"{at}: '{key}' is not a tag id; use an ArUco id from 80 to 99") from None
        if isinstance(key, (bool, float)) or tag not in STATE_TAG_IDS:
            raise ConfigError(f"{at}: tag id {key} is outside 80-99; state tokens use DICT_4X4_100 ids 80 to 99")
        if tag in taken:
            raise ConfigError(f"{at}: tag {tag} is already a {taken[tag]} token tag; give the state token its own id")
        if tag in tags:
            raise ConfigError(f"{at}: tag {tag} is given twice; give each id one meaning")
        count = 1
        if isinstance(v, Mapping):
            vr = _Reader(v, at)
            vr.expect("meaning", "count")
            meaning = vr.get("meaning", str)
            count = vr.get("count", int, 1)
        elif isinstance(v, str):
            meaning = v
        else:
            raise ConfigError(f"{at}: expected a meaning ({', '.join(STATE_MEANINGS)}) or "
                              f"{{meaning: damage, count: N}}, got {v!r}")
        if meaning not in STATE_MEANINGS:
            raise ConfigError(f"{at}: '{meaning}' is not a state-token meaning{_suggest(meaning, STATE_MEANINGS)}; "
                              f"use one of {', '.join(STATE_MEANINGS)}")
        if count < 1 or (meaning != "damage" and count != 1):
            raise ConfigError(f"{at}.count: {count} is not allowed; a damage token counts 1 or more points, "
                              f"an activation token counts 1 (leave count out)")
        tags[tag] = StateTokenSpec(tag, meaning, count)
    return StateTokens(tags=tags, diameter_in=diameter, reach_in=reach)


def _token_styles(sr: "_Reader | None") -> dict[str, tuple[TokenStyle, ...]]:
    """``untagged_token_styles: {objective: [{name: red, bgr: [40, 40, 200]}], treasure: [...]}``."""
    if sr is None:
        return {}
    sr.expect("objective", "treasure")
    out: dict[str, tuple[TokenStyle, ...]] = {}
    for kind in ("objective", "treasure"):
        styles = []
        for k, e in enumerate(sr.get(kind, list, [])):
            er = _Reader(e, f"{sr.where}.{kind}[{k}]")
            bgr = er.get("bgr", list)
            if len(bgr) != 3 or not all(isinstance(c, (int, float)) and 0 <= c <= 255 for c in bgr):
                raise ConfigError(f"{er.where}.bgr: give three numbers 0-255 (blue, green, red)")
            styles.append(TokenStyle(er.get("name", str), tuple(int(c) for c in bgr)))
            er.done()
        out[kind] = tuple(styles)
    return out


def _shaped_roster(entries: list, where: str, n_listed: int) -> list:
    """A side's ``bases`` (the eval sets' form: one ``{shape, size_mm: [width, depth]}`` per
    fighter) as ``bases_mm`` entries; it says each base's shape, which ``bases_mm`` alone
    (an oval's larger size as a number) cannot."""
    if n_listed and len(entries) != n_listed:
        raise ConfigError(f"{where}: {len(entries)} bases but bases_mm lists {n_listed}; give one entry "
                          f"per fighter in both (or only bases)")
    out: list = []
    for k, e in enumerate(entries):
        er = _Reader(e, f"{where}[{k}]")
        er.expect("shape", "size_mm")
        shape = er.choice("shape", BASE_SHAPES)
        size = er.get("size_mm", list)
        out.append({"shape": shape, "mm": size[0] if shape == "round" else size})
    return out


def _bases(entries: list, where: str) -> tuple[tuple[float, ...], tuple[BaseSize, ...]]:
    """A side's ``bases_mm`` list: numbers are round diameters; mappings
    ``{shape: round|oval|rect, mm: ...}`` (a number for round, [width, depth] otherwise).
    Both returned one per fighter, as listed."""
    round_mm: list[float] = []
    shaped: list[BaseSize] = []
    for k, e in enumerate(entries):
        at = f"{where}[{k}]"
        if isinstance(e, str):
            try:
                e = float(e)
            except ValueError:
                raise ConfigError(f"{at}: expected a diameter in mm or {{shape: oval|rect, mm: [width, depth]}}, "
                                  f"got {e!r}") from None
        if isinstance(e, (int, float)) and not isinstance(e, bool):
            if not (math.isfinite(float(e)) and e > 0):
                raise ConfigError(f"{at}: a base size must be a positive number of mm, got {e!r}")
            round_mm.append(float(e))
            continue
        br = _Reader(e, at)
        br.expect("shape", "mm")  # a misspelt key first: it is the cause of what else looks wrong
        shape = br.choice("shape", BASE_SHAPES)
        mm = br.d.get("mm")
        if shape == "round":
            if isinstance(mm, list) and len(mm) == 1:
                mm = mm[0]
            if not isinstance(mm, (int, float)) or isinstance(mm, bool) or not (math.isfinite(float(mm)) and mm > 0):
                raise ConfigError(f"{at}.mm: a round base takes one positive diameter in mm, got {mm!r}")
            round_mm.append(float(mm))
        else:
            if mm is None:
                raise ConfigError(f"{at}: missing required key 'mm' (the {shape} base's [width, depth] in mm)")
            try:
                w, d = (float(v) for v in mm)
            except (TypeError, ValueError):
                raise ConfigError(f"{at}.mm: {'an oval' if shape == 'oval' else 'a rect'} base takes two sizes [width, depth] in mm, got {mm!r}") from None
            if not (math.isfinite(w) and math.isfinite(d) and w > 0 and d > 0):
                raise ConfigError(f"{at}.mm: sizes must be positive numbers of mm, got {mm!r}")
            w, d = max(w, d), min(w, d)
            if shape == "oval" and w == d:
                raise ConfigError(f"{at}: an oval of {w:g}x{d:g} mm is round; write it as the number {w:g}")
            shaped.append(BaseSize(shape, w, d))
        br.done()
    return tuple(round_mm), tuple(shaped)


def _pair(v: Any, where: str) -> tuple[float, float]:
    try:
        a, b = v
        return (float(a), float(b))
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected two numbers [x, y], got {v!r}") from None


def _suggest(word: str, options: Any) -> str:
    m = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{m[0]}'?)" if m else ""


class _Reader:
    """Reads one mapping of the config, remembering which keys were used so that a
    leftover (misspelt) key is reported with its location."""

    def __init__(self, d: Any, where: str):
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where}: expected a mapping of keys to values, got {type(d).__name__}")
        self.d, self.where, self.used = d, where, set()

    def allow(self, *keys: str) -> None:
        self.used.update(keys)

    def expect(self, *keys: str) -> None:
        """Declare every key this mapping may hold, and fail now on any other."""
        self.used.update(keys)
        self.done()

    def get(self, key: str, typ: type, default: Any = ...) -> Any:
        self.used.add(key)
        if key not in self.d or self.d[key] is None:
            if default is ...:
                raise ConfigError(f"{self.where}: missing required key '{key}'")
            return default
        v = self.d[key]
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if typ is float and number and math.isfinite(float(v)):
            return float(v)
        if typ is int and number and isinstance(v, int):
            return v
        if (typ is dict and isinstance(v, Mapping)) or (typ in (str, list, bool) and isinstance(v, typ)):
            return v
        raise ConfigError(f"{self.where}.{key}: expected {typ.__name__}, got {type(v).__name__} {v!r}")

    def choice(self, key: str, options: Any, default: Any = ...) -> Any:
        """A string that must be one of ``options``."""
        v = self.get(key, str, default)
        if v is not None and v not in options:
            raise ConfigError(f"{self.where}.{key}: '{v}' is not one of {', '.join(options)}{_suggest(v, options)}")
        return v

    def sub(self, key: str, default: Any) -> "_Reader | None":
        v = self.get(key, dict, default)
        return None if v is None else _Reader(v, f"{self.where}.{key}")

    def done(self) -> None:
        for k in self.d:
            if k not in self.used:
                raise ConfigError(f"{self.where}: unknown key '{k}'{_suggest(k, self.used)}")
