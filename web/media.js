// Screenshots: thumbnails that open the full image in a viewer.

import { setMediaSource } from './api.js';
import { h } from './dom.js';

// image is an <img> showing stored media id. A failed load leaves the alt
// text.
export function image(id, alt, cls) {
  const img = h('img', { class: cls, alt, loading: 'lazy', decoding: 'async', dataset: { media: id } });
  setMediaSource(img, id).catch(() => img.classList.add('broken'));
  return img;
}

// thumbnail is a small image (thumbId, else the full one) that opens the
// full screenshot fullId in the viewer.
export function thumbnail(fullId, thumbId, alt) {
  return h('button', {
    type: 'button', class: 'thumb', title: 'Show the full screenshot',
    on: { click: (e) => { e.preventDefault(); showImage(fullId, alt); } },
  }, image(thumbId || fullId, alt));
}

let viewer = null;

// showImage opens the viewer on media id.
export function showImage(id, alt) {
  if (!viewer) {
    viewer = h('dialog', { class: 'viewer', id: 'viewer' });
    viewer.addEventListener('click', () => viewer.close());
    document.body.appendChild(viewer);
  }
  viewer.replaceChildren(
    h('img', { alt, class: 'full-image' }),
    h('p', { class: 'hint', text: 'Click or press Esc to close' }),
  );
  setMediaSource(viewer.firstChild, id).catch(() => viewer.firstChild.classList.add('broken'));
  viewer.showModal();
}
