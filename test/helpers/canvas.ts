import type { Locator, Page } from 'playwright-core';
import { expect } from 'vitest';

/** The builder's canvas as a person uses it, for the browser tests. */

/** The text of an element ('' when it has none), for `expect.poll`. */
export const textOf = async (locator: Locator) => (await locator.textContent()) ?? '';

/** The canvas element of a node, by its id. */
export const nodeEl = (page: Page, id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);

export async function centre(locator: Locator): Promise<{ x: number; y: number }> {
  const box = await locator.boundingBox();
  if (!box) throw new Error('element not on screen');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Waits until the canvas stops moving (it pans and fits the view with an animation). */
export async function settled(page: Page): Promise<void> {
  const viewport = page.locator('.react-flow__viewport').first();
  let last = '';
  await expect
    .poll(async () => {
      const now = (await viewport.getAttribute('style')) ?? '';
      const same = now === last;
      last = now;
      return same;
    })
    .toBe(true);
}

/** Draws an edge as a person does: from the source node's right-hand handle to the target's left-hand one. */
export async function connect(page: Page, from: string, to: string): Promise<void> {
  const a = await centre(nodeEl(page, from).locator('.react-flow__handle.source'));
  const b = await centre(nodeEl(page, to).locator('.react-flow__handle.target'));
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 6 });
  await page.mouse.move(b.x, b.y, { steps: 6 });
  await page.mouse.up();
}
