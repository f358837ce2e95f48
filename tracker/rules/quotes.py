"""The rule sentences the rules core applies, quoted verbatim from the rules texts.

Every :class:`~tracker.rules.ruling.Ruling` names one :class:`Rule` from this module; the
tests check each quote still appears word for word in ``shared/rules``.

>>> CONTROL.source
'warcry-objectives-and-treasure.txt'
>>> CONTROL.quote.startswith("A player gains control of an objective")
True
"""

from __future__ import annotations

from dataclasses import dataclass

OBJ = "warcry-objectives-and-treasure.txt"
TER = "warcry-terrain.txt"


@dataclass(frozen=True)
class Rule:
    """A rule: a short id, the file it comes from, and the sentence(s) quoted verbatim."""

    id: str
    source: str
    quote: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "source": self.source, "quote": self.quote}


# --- objectives and tokens -------------------------------------------------------------
MEASURE_TO_TOKEN_CENTRE = Rule("token-centre", OBJ, "In addition, when measuring distances to and from objectives, treasure tokens and other markers, always measure to and from the centre of the marker or token.")
TOKENS_ARE_FLOOR = Rule("tokens-are-floor", OBJ, "Objective and treasure tokens are treated as part of the battlefield floor or the platform they are placed upon.")
CONTROL = Rule("control", OBJ, 'A player gains control of an objective if, at the end of a battle round, they have more friendly fighters within 3" of it than there are enemy fighters within 3" of it.')
CONTROL_PERSISTS = Rule("control-persists", OBJ, "Once a player gains control of an objective, it remains under their control until another player gains control of it.")

# --- treasure ----------------------------------------------------------------------------
TREASURE_NOT_TOUCHING = Rule("treasure-not-touching", OBJ, "Fighters cannot end a move with any part of their base touching a treasure token.")
PICK_UP = Rule("pick-up", OBJ, 'If at any point during a move action a fighter moves within 1" of a treasure token, the fighter can pick up that treasure.')
ALREADY_CARRYING = Rule("already-carrying", OBJ, "A fighter cannot pick up treasure if they are already carrying treasure.")
MONSTER_BEAST_NO_TREASURE = Rule("monster-beast-no-treasure", OBJ, "Fighters with the Monster runemark () or Beast runemark () cannot carry treasure.")
NO_FLY_CARRYING = Rule("no-fly-carrying", OBJ, "Fighters cannot fly while carrying treasure.")
PICK_UP_MOVE = Rule("pick-up-move", OBJ, "When a fighter picks up treasure during a move action, subtract 2 from their Move characteristic (to a minimum of 3) for the remainder of that move action and they cannot fly for the remainder of that move action.")
PICK_UP_MOVE_ENDS = Rule("pick-up-move-ends", OBJ, "If that fighter had moved further than that modified Move characteristic before they picked up that treasure, that move action ends.")
BEGIN_MOVE_CARRYING = Rule("begin-move-carrying", OBJ, "If a fighter begins a move action carrying treasure, subtract 2 from their Move characteristic for that move action (to a minimum of 3).")
NO_DISENGAGE = Rule("no-disengage", OBJ, "In addition, fighters cannot make disengage actions while carrying treasure.")
DROP = Rule("drop", OBJ, 'In both cases, the player controlling that fighter picks a point on a platform or the battlefield floor that is within 1" horizontally of the fighter, visible to the fighter, and either vertically level to or any distance vertically lower than the fighter, and places the treasure token there.')
DROP_WHEN_TAKEN_DOWN = Rule("drop-taken-down", OBJ, "If a fighter carrying treasure is taken down, they automatically drop the treasure before the fighter's model is removed from play.")
OTHER_TOKENS = Rule("other-tokens", OBJ, "If these tokens are placed upon the battlefield, they do not interact with the battle in any way.")

# --- terrain -----------------------------------------------------------------------------
OBSTACLE = Rule("obstacle", TER, 'An obstacle is any part of a terrain feature that prevents a fighter from moving horizontally and that extends vertically 1" or more from the battlefield floor or the platform upon which it is placed.')
LOW_TERRAIN = Rule("low-terrain", TER, 'Any part of a terrain feature that extends vertically less than 1" from the battlefield floor or the platform upon which it is placed is known as low terrain.')
LOW_TERRAIN_IS_FLOOR = Rule("low-terrain-is-floor", TER, "In addition, low terrain is treated as part of the battlefield floor or the platform upon which it is placed.")
PLATFORM = Rule("platform", TER, 'A platform is a horizontally flat surface on a terrain feature with a surface area larger than 1" by 1".')
FALLING_EDGE = Rule("falling-edge", TER, 'When a fighter within ½" of the edge of an open platform (i.e. an edge that is not enclosed by an obstacle, such as a wall) is targeted by an attack action, their controlling player must take a falling test for them after the attack action has been resolved.')
FALLING_FLY = Rule("falling-fly", TER, "This rule does not affect fighters with the Fly runemark ().")
DEADLY_CLIMB = Rule("deadly-climb", TER, "Deadly terrain is treated as an obstacle, but when a fighter begins to climb it, allocate D6 damage points to that fighter first.")
DEADLY_FALL = Rule("deadly-fall", TER, 'In addition, when a fighter is placed after falling, if they are placed within 1" of any deadly terrain, allocate D6 damage points to that fighter.')
UNSCALABLE = Rule("unscalable", TER, "Unscalable terrain is treated as an obstacle with the following exception: fighters cannot climb or move on unscalable terrain.")
UNSCALABLE_END = Rule("unscalable-end", TER, "If a fighter ends an action on unscalable terrain, they first suffer impact damage and then they fall.")
STAIRS_NO_FALL = Rule("stairs-no-fall", TER, "- Fighters that finish their activation climbing stairs or ladders do not fall and can remain part way up (if it is not possible to physically place the fighter in their current location, make a note of where they are).")
STAIRS_FALLING_TEST = Rule("stairs-falling-test", TER, "- When an attack action targets an enemy fighter that has ended their activation climbing stairs or ladders, the target fighter must take a falling test after the attack action has been resolved.")
MOUNT_STAIRS = Rule("mount-stairs", TER, "- Fighters with the Mount runemark () can climb stairs.")
PASSAGE_MEASURE = Rule("passage-measure", TER, "To move through an archway or a door, first measure the distance in a straight line through the horizontal centre of the archway or door. If the fighter has sufficient movement to pass through the archway or door and be placed on the other side, they can move through it.")
ARCHWAY_RESTRICTION = Rule("archway-restriction", TER, "Fighters with any of the following runemarks cannot move through archways:\n- Monster ()\n- Mount ()")
DOOR_RESTRICTION = Rule("door-restriction", TER, "Fighters with any of the following runemarks cannot move through closed doors:\n- Monster ()\n- Mount ()\n- Beast ()")
COVER_TOUGHNESS = Rule("cover-toughness", TER, "If a fighter is in cover, add 1 to their Toughness characteristic for the duration of that attack action.")
COVER_OBSTACLE = Rule("cover-obstacle", TER, "To determine if a target fighter is in cover due to any obstacles, draw an imaginary line between the closest points on each fighter’s base (for rules purposes, the line is considered to be 1mm wide). If the line passes through an obstacle, the target fighter is in cover.")
COVER_NEAR_ATTACKER = Rule("cover-near-attacker", TER, 'If the fighters are more than 1" away from each other, do not count parts of obstacles within ½" of the fighter making the attack action (this represents fighters that have weapons with a longer range being able to aim around corners, through gaps in nearby terrain, and so on).')
COVER_THROUGH_NOT_OVER = Rule("cover-through-not-over", TER, "It is important to note the line drawn must pass through an obstacle and not simply over it.")
COVER_PLATFORM = Rule("cover-platform", TER, 'When a fighter on a platform is targeted by an attack action, they are in cover if the fighter making the attack action is 2" or more vertically below the target fighter.')

ALL_RULES: tuple[Rule, ...] = tuple(v for v in globals().values() if isinstance(v, Rule))
