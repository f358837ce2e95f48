"""The Epic-scale objective rule sentences, quoted verbatim from ``epic-objectives.txt``
(bullet marks left off). Every Epic ruling names one of these; ``tests/test_epic_rules.py``
checks each still appears word for word in ``shared/rules``.

>>> TAKE_AND_HOLD_CONTROL.quote.endswith("then you are in control of this objective this turn.")
True
>>> len({r.id for r in EPIC_RULES}) == len(EPIC_RULES)
True
"""

from __future__ import annotations

from .quotes import Rule

EPIC = "epic-objectives.txt"

PLACEMENT_OWN_MARKERS = Rule('epic-placement-own-markers', EPIC, 'You may not place any objective marker within 15 cm of any of your other objective markers.')
PLACEMENT_EDGE = Rule('epic-placement-edge', EPIC, 'You may not place any objective marker within 15 cm of the edge of the playing area\u2009—\u2009unless the scenario specifies that your forces enter from that edge. (In effect, that table edge is the leading edge of your deployment zone.)')
MARKER_CENTRES = Rule('epic-marker-centres', EPIC, 'We recommend that you base all objective-related measurements on the centres of the markers rather than on their edges. This gives you a bit more room to place them and means that it doesn’t really matter exactly how big or small each marker is.')
OWN_OBJECTIVES = Rule('epic-own-objectives', EPIC, 'For the most part, you can only benefit from your own objectives. Except where the rules say otherwise, you gain nothing from control of your opponent’s objectives.')
TAKE_AND_HOLD_PLACEMENT = Rule('take-and-hold-placement', EPIC, 'Placement: You must place the objective marker either in your opponent’s deployment zone or more than 90 cm away from your deployment zone.')
TAKE_AND_HOLD_CONTROL = Rule('take-and-hold-control', EPIC, 'Game effects and control: At the end of the Rally phase: If you have a unit that is within 15 cm of your Take & Hold objective marker and closer to it than any enemy units, then you are in control of this objective this turn.')
TAKE_AND_HOLD_MORALE = Rule('take-and-hold-morale', EPIC, 'Morale effect: At the end of each Rally phase: For each Take & Hold objective that you control, add D3 points to your Army Morale value.')
RESCUE_PLACEMENT = Rule('rescue-placement', EPIC, 'Placement: You must place the objective marker more than 90 cm away from your deployment zone and within a terrain feature that offers an Infantry Armour bonus for cover.')
RESCUE_PICK_UP = Rule('rescue-pick-up', EPIC, "Game effects and control: When a player moves a ground unit that they control onto the objective marker, they may use that unit to 'pick up' the objective. We call this the 'escort unit'.")
RESCUE_TRAVELS = Rule('rescue-travels', EPIC, 'The player can then continue to use the escort unit entirely as normal for its type\u2009—\u2009it’s just that the objective travels with it.')
RESCUE_ESCORT_DESTROYED = Rule('rescue-escort-destroyed', EPIC, 'If the escort unit is destroyed, leave the objective marker at that point on the playing surface\u2009—\u2009leave the marker there until either player moves a unit they control over it, picks it up, and becomes the current escort unit.')
RESCUE_CLOSE_COMBAT = Rule('rescue-close-combat', EPIC, 'If the escort unit is destroyed in close combat then, if there is a surviving enemy unit that was in base contact with the escort unit, the opposing player may declare this unit as the new escort unit and pick up the objective immediately.')
RESCUE_INITIAL_PICK_UP = Rule('rescue-initial-pick-up', EPIC, 'To be clear, only you can make the initial pick up of your Rescue objective. However, once you have done this, it is possible for your opponent to destroy your escort unit and then have one of their units pick up your unescorted Rescue objective and become the current escort unit, as we explain above.')
RESCUE_MORALE = Rule('rescue-morale', EPIC, 'Morale effect: At the end of each Rally phase: For each of your units that has a Rescue objective (that is, for each of your units that currently count as an escort unit), apply both of these effects:')
RESCUE_MORALE_ADD = Rule('rescue-morale-add', EPIC, 'Add 1 point to your Army Morale value.')
RESCUE_MORALE_DEDUCT = Rule('rescue-morale-deduct', EPIC, 'Your opponent must deduct 1 point from their Army Morale value.')
CLEANSE_PLACEMENT = Rule('cleanse-placement', EPIC, 'Placement: You must place this objective marker inside your own deployment zone.')
CLEANSE_CONTROL = Rule('cleanse-control', EPIC, 'Game effects and control: At the end of the Rally phase: If you have a unit that is within 15 cm of your Cleanse objective marker and closer to it than any enemy units, then you control the objective.')
CLEANSE_MORALE = Rule('cleanse-morale', EPIC, 'Morale effect: At the end of each Rally phase: For each of your Cleanse objectives that you control, add 1 point to your Army Morale value.')
BUNKER_PLACEMENT = Rule('bunker-placement', EPIC, 'Placement: You must place this objective marker inside your opponent’s deployment zone.')
BUNKER_STATIC_UNIT = Rule('bunker-static-unit', EPIC, 'Game effects and control: The bunker objective marker represents a static unit that has these characteristics:')
BUNKER_GOAL = Rule('bunker-goal', EPIC, 'Your goal with this objective is to use shooting and/or assaults to attack and destroy the bunker.')
BUNKER_WAR_ENGINE = Rule('bunker-war-engine', EPIC, 'Treat the marker as if it were an enemy War Engine unit that is in the Immobilised condition.')
BUNKER_CRITICAL = Rule('bunker-critical', EPIC, 'If it suffers critical damage, it is destroyed, irrespective of any remaining Damage Capacity.')
BUNKER_SUPPORT = Rule('bunker-support', EPIC, 'In an assault, enemy units that are within 15 cm of the bunker objective marker can lend support during the Assault phase.')
BUNKER_MORALE = Rule('bunker-morale', EPIC, 'Morale effect: When you destroy your bunker objective, roll a D6\u2009—\u2009your opponent must immediately deduct the score from their Army Morale value.')
REMOVE_MARKER = Rule('remove-marker', EPIC, 'Then remove the objective marker from the playing area.')
CAPTURE_PLACEMENT = Rule('capture-placement', EPIC, 'Placement: You must place this objective in your opponent’s deployment zone.')
CAPTURE_CONTROL = Rule('capture-control', EPIC, 'Game effects and control: At the end of the Rally phase: If you have a unit in base contact with your Capture objective marker, then you control this objective.')
CAPTURE_MORALE = Rule('capture-morale', EPIC, 'Morale effect: At the end of the Rally phase: For each of your Capture objectives that you control at the end of a turn, choose and apply one of these effects:')
CAPTURE_EFFECT_CAPTURE = Rule('capture-effect-capture', EPIC, 'Capture: Add D6 points to your Army Morale value.')
CAPTURE_EFFECT_DESTROY = Rule('capture-effect-destroy', EPIC, 'Destroy: Your opponent must subtract D6 points from their Army Morale value.')
TODO_MORALE_TIMING = Rule('todo-morale-timing', EPIC, "[TODO: We should tweak the 'R4. Check the game end conditions' topic and the 'End of turn' part of the turn sequence, and rationalise how we refer to objectives and Morale effects that we check or apply 'in the Rally phase' or 'at the end of the turn'. At present, the arrangement incorrectly implies that some Morale effects happen after we check for the game end conditions in the turn sequence.]")
TODO_BUNKER_SUPPORT = Rule('todo-bunker-support', EPIC, '[TODO: Clarify. My guess is that the intent is for such units to lend support, but not for this alone to cause their detachment to count as engaged in the assault… but I’m not sure.]')

EPIC_RULES: tuple[Rule, ...] = tuple(v for v in globals().values() if isinstance(v, Rule))
